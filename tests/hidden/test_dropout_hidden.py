"""Step 4 (dropout): hidden checks. Dropout is judged by statistics, never by a seeded mask."""

import math

import torch
from .oracle import generator, randn

from grader.check.causes import observation
from grader.check.signatures import layout_outcome, rate_outcome, rescale_outcome
from grader.check.testing import expect_tensor, fail, graded, named_crashes

SIZE = (8, 64, 64)  # 32768 entries: the zero rate is within 1% of p with overwhelming probability


def dropped(student, weights, p, seed=None, training=True):
    with named_crashes():
        out = student.call("attention_dropout", weights, p, training=training, seed=seed)
    return expect_tensor(out, f"dropout output (p={p})", shape=tuple(weights.shape))


def rescaling(student, weights, p, seed):
    """The rescale observation: how the survivors of one call compare with the input."""
    out = dropped(student, weights, p, seed=seed)
    kept = out != 0
    if not kept.any():
        return None, observation("rate", "other")
    ratio = out[kept] / weights.double()[kept]
    typical = ratio.median().item()
    uniform = bool(((ratio - typical).abs() <= 1e-4 * abs(typical)).all())
    return typical, observation("rescale", rescale_outcome(typical, p) if uniform else "other")


def rate(student, weights, p, seed):
    zeros = (dropped(student, weights, p, seed=seed) == 0).double().mean().item()
    sigma = math.sqrt(p * (1 - p) / weights.numel())
    return zeros, observation("rate", rate_outcome(zeros, p, 6 * sigma + 1e-3) if abs(zeros - p) >= 6 * sigma + 1e-3
                              else "ok")


def probes(student):
    """Every dropout probe on fresh inputs: rate, rescale, fresh masks, layout, eval."""
    weights = torch.rand(*SIZE, generator=generator(5)) + 0.5
    found = [rate(student, weights, 0.2, seed=31)[1], rescaling(student, weights, 0.25, seed=32)[1]]
    first = dropped(student, torch.ones(*SIZE), 0.5, seed=33) == 0
    second = dropped(student, torch.ones(*SIZE), 0.5) == 0
    found.append(observation("fresh", "same" if torch.equal(first, second) else "ok"))
    found.append(observation("layout", layout_outcome(first)))
    evaluated = dropped(student, weights, 0.4, training=False, seed=34)
    found.append(observation("eval", "ok" if torch.allclose(evaluated, weights.double(), atol=1e-7) else "random"))
    return found


@graded("dropout: the share of zeroed weights is p (p=0.2 and p=0.7)", weight=1)
def test_zero_rate(student):
    weights = torch.rand(*SIZE, generator=generator(5)) + 0.5
    for p in (0.2, 0.7):
        zeros, seen = rate(student, weights, p, seed=11)
        if seen["outcome"] != "ok":
            fail(f"with p={p}, {zeros:.1%} of the weights were zeroed (expected about {p:.0%})",
                 [seen] + probes(student))


@graded("dropout: surviving weights are scaled by 1/(1-p)", weight=2)
def test_rescaling(student):
    weights = torch.rand(*SIZE, generator=generator(5)) + 0.5
    p = 0.25
    typical, seen = rescaling(student, weights, p, seed=12)
    if seen["outcome"] != "ok":
        found = (f"surviving weights were multiplied by {typical:.4g} (p={p}); inverted dropout multiplies them "
                 "by 1/(1-p), so that the expected value is unchanged") if typical else "every weight was dropped"
        fail(found, [seen] + probes(student))


@graded("dropout: p=0 changes nothing even while training, and nothing is dropped when not training", weight=1)
def test_p_zero(student):
    weights = torch.softmax(randn(2, 5, 5, seed=1), dim=-1)
    out = dropped(student, weights, 0.0, seed=3)
    if not torch.allclose(out, weights.double(), atol=1e-7):
        fail("with p=0 dropout must return the weights unchanged", probes(student))
    for p in (0.2, 0.9):
        out = dropped(student, weights, p, training=False, seed=4)
        if not torch.allclose(out, weights.double(), atol=1e-7):
            fail(f"with training=False (p={p}) the weights came back changed",
                 [observation("eval", "random")] + probes(student))


@graded("dropout: each weight is dropped independently and afresh on every call", weight=1)
def test_randomness(student):
    weights = torch.ones(*SIZE)
    first = dropped(student, weights, 0.5, seed=21) == 0
    second = dropped(student, weights, 0.5) == 0
    if torch.equal(first, second):
        fail("two calls dropped exactly the same weights", [observation("fresh", "same")] + probes(student))
    # Afresh, and from torch's generator as nn.Dropout draws: the same seed drops the same weights (a pattern of
    # its own that only changes from call to call does not).
    if not torch.equal(first, dropped(student, weights, 0.5, seed=21) == 0):
        fail("after the same torch.manual_seed, two calls dropped different weights: draw the mask from torch's "
             "generator (torch.rand, torch.bernoulli or nn.functional.dropout), as nn.Dropout does",
             probes(student))
    layout = layout_outcome(first)
    if layout != "ok":
        what = {"batch": "every matrix of the batch dropped exactly the same weights",
                "lines": "whole rows or columns are dropped together"}[layout]
        fail(what, [observation("layout", layout)] + probes(student))
