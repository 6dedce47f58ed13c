"""Step 4 (dropout): public checks. Run them with `make check STEP=dropout`."""

import torch

from grader.check import public_inputs
from grader.check.causes import observation
from grader.check.signatures import layout_outcome, rate_outcome, rescale_outcome
from grader.check.testing import diagnosed, expect_tensor, fail, graded, once, seeded


def dropout_probes(student):
    """The fault model's dropout probes on public inputs: the share dropped, how the survivors are scaled, whether
    the mask repeats across the batch, whether a second call draws a new mask, and eval mode."""
    def probes():
        weights = torch.rand(4, 64, 64, generator=public_inputs.generator(3)) + 0.5
        out = expect_tensor(student.call("attention_dropout", weights, 0.25, training=True, seed=5), "dropout output",
                            shape=(4, 64, 64))
        dropped = out == 0
        found = [observation("rate", rate_outcome(dropped.double().mean().item(), 0.25, 0.02))]
        if bool((~dropped).any()):
            ratio = out[~dropped] / weights.double()[~dropped]
            typical = ratio.median().item()
            uniform = bool(((ratio - typical).abs() <= 1e-4 * abs(typical)).all())
            found.append(observation("rescale", rescale_outcome(typical, 0.25) if uniform else "other"))
        if bool(dropped.any()):
            found.append(observation("layout", layout_outcome(dropped, 0.25)))
            again = expect_tensor(student.call("attention_dropout", weights, 0.25, training=True), "dropout output",
                                  shape=(4, 64, 64))
            found.append(observation("fresh", "same" if torch.equal(again == 0, dropped) else "ok"))
        kept = expect_tensor(student.call("attention_dropout", weights, 0.25, training=False), "dropout output",
                             shape=(4, 64, 64))
        found.append(observation("eval", "ok" if torch.allclose(kept.float(), weights) else "random"))
        return found

    return once(probes)


@graded("dropout: attention_dropout is the identity when not training", weight=1)
def test_identity_in_eval(student):
    with seeded(0):
        weights = torch.softmax(torch.randn(2, 4, 4), dim=-1)
    with diagnosed(dropout_probes(student)):
        result = expect_tensor(student.call("attention_dropout", weights, 0.3, training=False), "dropout output",
                               shape=(2, 4, 4))
        assert torch.equal(result.float(), weights), "with training=False the weights came back changed"


@graded("dropout: keeps the shape and zeroes roughly a fraction p of the weights", weight=2)
def test_zero_fraction(student):
    weights = torch.rand(4, 64, 64, generator=public_inputs.generator(6)) + 0.5  # never 0 but where dropped
    with diagnosed(dropout_probes(student)):
        result = expect_tensor(student.call("attention_dropout", weights, 0.3, training=True, seed=1),
                               "dropout output", shape=(4, 64, 64))
        zero_rate = (result == 0).double().mean().item()
        assert abs(zero_rate - 0.3) < 0.03, (
            f"with p=0.3 about 30% of the weights should be zeroed, yours zeroed {zero_rate:.1%}")


@graded("dropout: survivors are multiplied by 1/(1-p), which keeps each weight's expected value", weight=1)
def test_rescaled(student):
    weights = torch.rand(2, 32, 32, generator=public_inputs.generator(8)) + 0.5
    with diagnosed(dropout_probes(student)):
        result = expect_tensor(student.call("attention_dropout", weights, 0.4, training=True, seed=2),
                               "dropout output", shape=(2, 32, 32))
        kept = result != 0
        assert kept.any(), "every weight was dropped"
        ratio = result[kept] / weights.double()[kept]
        if not torch.allclose(ratio, torch.full_like(ratio, 1 / 0.6), rtol=1e-4):
            fail(f"with p=0.4 the surviving weights were multiplied by {ratio.median().item():.4g} instead of "
                 "1/(1-p) = 1.667, which keeps the expected value of every weight unchanged",
                 [observation("rescale", rescale_outcome(ratio.median().item(), 0.4))])


@graded("dropout: every weight of every matrix in the batch is dropped on its own", weight=1)
def test_independent(student):
    weights = torch.rand(6, 32, 32, generator=public_inputs.generator(9)) + 0.5
    with diagnosed(dropout_probes(student)):
        dropped = expect_tensor(student.call("attention_dropout", weights, 0.5, training=True, seed=4),
                                "dropout output", shape=(6, 32, 32)) == 0
        layout = layout_outcome(dropped)
        if layout != "ok":
            fail({"batch": "every matrix of the batch dropped exactly the same weights",
                  "lines": "whole rows or columns were dropped together"}[layout], [observation("layout", layout)])
