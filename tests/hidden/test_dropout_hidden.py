"""Step 4 (dropout): hidden checks. Dropout is judged by statistics, never by a seeded mask."""

import math

import torch
from .oracle import generator, randn

from grader.check.testing import Failure, expect_tensor, graded

SIZE = (8, 64, 64)  # 32768 entries: the zero rate is within 1% of p with overwhelming probability


def dropped(student, weights, p, seed):
    out = student.call("attention_dropout", weights, p, training=True, seed=seed)
    return expect_tensor(out, f"dropout output (p={p})", shape=tuple(weights.shape))


@graded("dropout: the share of zeroed weights is p (p=0.2 and p=0.7)", weight=2)
def test_zero_rate(student):
    weights = torch.rand(*SIZE, generator=generator(5)) + 0.5
    for p in (0.2, 0.7):
        rate = (dropped(student, weights, p, seed=11) == 0).double().mean().item()
        sigma = math.sqrt(p * (1 - p) / weights.numel())
        if abs(rate - p) >= 6 * sigma + 1e-3:
            keeps = abs(rate - (1 - p)) < 0.02
            raise Failure(f"with p={p}, {rate:.1%} of the weights were zeroed (expected about {p:.0%}); "
                          + ("p is the probability of dropping a weight, not of keeping it" if keeps
                             else "drop each weight independently with probability p"),
                          cause="dropout_keep_probability" if keeps else None)


@graded("dropout: surviving weights are scaled by 1/(1-p)", weight=3)
def test_rescaling(student):
    weights = torch.rand(*SIZE, generator=generator(5)) + 0.5
    p = 0.25
    out = dropped(student, weights, p, seed=12)
    kept = out != 0
    assert kept.any(), "every weight was dropped"
    ratio = out[kept] / weights.double()[kept]
    if not torch.allclose(ratio, torch.full_like(ratio, 1 / (1 - p)), rtol=1e-4):
        typical = ratio.median().item()
        guesses = {1.0: ("dropout_no_rescale", "the survivors are not rescaled"),
                   1 / p: ("dropout_rescale_by_p", "the survivors are divided by p"),
                   1 - p: ("dropout_scaled_down", "the survivors are multiplied by (1 - p)")}
        cause, guess = next((found for value, found in guesses.items() if abs(typical - value) < 1e-3),
                            (None, None))
        raise Failure(f"surviving weights were multiplied by {typical:.4g} (p={p}); inverted dropout "
                      "multiplies them by 1/(1-p) so that the expected value is unchanged"
                      + (f": {guess}" if guess else ""), cause=cause)


@graded("dropout: p=0 changes nothing even while training, and nothing is dropped when not training", weight=1)
def test_p_zero(student):
    weights = torch.softmax(randn(2, 5, 5, seed=1), dim=-1)
    out = expect_tensor(student.call("attention_dropout", weights, 0.0, training=True, seed=3), "dropout output")
    assert torch.allclose(out, weights.double(), atol=1e-7), "with p=0 dropout must return the weights unchanged"
    for p in (0.2, 0.9):
        out = expect_tensor(student.call("attention_dropout", weights, p, training=False, seed=4), "dropout output")
        if not torch.allclose(out, weights.double(), atol=1e-7):
            raise Failure(f"with training=False (p={p}) the weights came back changed: dropout is only active "
                          "while training", cause="dropout_in_eval")


@graded("dropout: each weight is dropped independently and afresh on every call", weight=1)
def test_randomness(student):
    weights = torch.ones(*SIZE)
    first = dropped(student, weights, 0.5, seed=21) == 0
    second = expect_tensor(student.call("attention_dropout", weights, 0.5, training=True), "dropout output") == 0
    if torch.equal(first, second):
        raise Failure("two calls dropped exactly the same weights: draw a new mask every call",
                      cause="dropout_same_mask")
    rows_all_zero = first.all(dim=-1).double().mean().item()
    cols_all_zero = first.all(dim=-2).double().mean().item()
    if rows_all_zero >= 0.01 or cols_all_zero >= 0.01:
        raise Failure("whole rows or columns are dropped together: the dropout mask must have the full shape of "
                      "the weights", cause="dropout_mask_shape")
