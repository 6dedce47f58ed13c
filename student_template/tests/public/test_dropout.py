"""Step 4 (dropout): public checks. Run them with `make check STEP=dropout`."""

import torch

from grader.check.testing import expect_tensor, graded, seeded


@graded("dropout: attention_dropout is the identity when not training", weight=1)
def test_identity_in_eval(student):
    with seeded(0):
        weights = torch.softmax(torch.randn(2, 4, 4), dim=-1)
    result = expect_tensor(student.call("attention_dropout", weights, 0.3, training=False), "dropout output",
                           shape=(2, 4, 4))
    assert torch.equal(result.float(), weights), (
        "with training=False the weights must come back unchanged: dropout is only active while training")


@graded("dropout: keeps the shape and zeroes roughly a fraction p of the weights", weight=2)
def test_zero_fraction(student):
    weights = torch.ones(4, 64, 64)
    result = expect_tensor(student.call("attention_dropout", weights, 0.3, training=True, seed=1), "dropout output",
                           shape=(4, 64, 64))
    zero_rate = (result == 0).double().mean().item()
    assert abs(zero_rate - 0.3) < 0.03, (
        f"with p=0.3 about 30% of the weights should be zeroed, yours zeroed {zero_rate:.1%}; "
        "p is the probability of dropping, not of keeping")
