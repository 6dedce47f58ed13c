"""Step 3 (masking): hidden checks."""

import itertools

import torch
from .oracle import expect_no_overflow, randn, suspects, weights_of

from grader.check.causes import observation
from grader.check.signatures import (mask_dtype_observations, mask_outcome, pattern_outcome, renorm_outcome,
                                     rows_outcome, scale_table, temperature_observation)
from grader.check.testing import (expect_close, expect_computed_from, expect_future_hidden, expect_rows_sum_to_one,
                                  expect_tensor, fail, graded, named_crashes)

CAUSAL_FAULTS = ("zero_fill", "no_mask", "mask_past", "mask_past_diagonal", "mask_hides_diagonal", "mask_off_by_one",
                 "softmax_dim", "softmax_batch", "no_scale", "scale_dk", "scale_after", "scale_multiplied")


@graded("masking: causal_mask is right for every length from 1 to 9", weight=1)
def test_mask_lengths(student):
    for n in range(9, 0, -1):  # longest first: for one token, hiding the diagonal and the past look the same
        with named_crashes():
            returned = student.call("causal_mask", n)
        mask = expect_tensor(returned, f"causal_mask({n})", shape=(n, n))  # (a float mask comes back as float64)
        if mask.dtype != torch.bool:
            fail(f"causal_mask({n}) should be a bool tensor, not {returned.dtype}", mask_dtype_observations(mask))
        expected = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        wrong = mask != expected
        if wrong.any():
            i, j = wrong.nonzero()[0].tolist()
            outcome = mask_outcome(mask)
            fail(f"causal_mask({n})[{i}, {j}] is {bool(mask[i, j])}: True must mean hidden, for exactly the "
                 "positions j > i", [observation("pattern", outcome)] if outcome else [], kind="signature")


def renormalized(weights):
    n = weights.shape[-1]
    kept = weights.double() * torch.tril(torch.ones(n, n, dtype=torch.float64))
    return kept / kept.sum(dim=-1, keepdim=True)


def renormalize_suspects(weights):
    """What mask_and_renormalize gives with the usual slips."""
    n = weights.shape[-1]
    kept = weights.double() * torch.tril(torch.ones(n, n, dtype=torch.float64))
    no_diagonal = weights.double() * torch.tril(torch.ones(n, n, dtype=torch.float64), diagonal=-1)
    found = [("not_renormalised", kept),
             ("mask_hides_diagonal", no_diagonal / no_diagonal.sum(-1, keepdim=True)),
             ("mask_past", renormalized(weights.transpose(-2, -1)).transpose(-2, -1)),
             ("renorm_columns", kept / kept.sum(-2, keepdim=True)),
             ("renorm_softmax", torch.softmax(kept, dim=-1))]
    if weights.dim() == 2:  # row sums without keepdim broadcast along the rows: column j / sum of row j
        found.append(("keepdim_missing", kept / kept.sum(-1)))
    return found


def renorm_probes(got, weights):
    def probes():
        found = [observation("renorm", renorm_outcome(got, weights))]
        pattern = pattern_outcome(got)
        return found + ([observation("pattern", pattern)] if pattern else [])

    return probes


@graded("masking: mask_and_renormalize matches the reference on a batch", weight=2)
def test_renormalize(student):
    # One matrix first: there a missing keepdim=True gives numbers (on a batch it raises).
    for weights in (torch.softmax(randn(5, 5, seed=7, scale=2.0), dim=-1),
                    torch.softmax(randn(3, 5, 5, seed=1, scale=2.0), dim=-1)):
        with named_crashes():
            got = student.call("mask_and_renormalize", weights)
        expect_close(got, renormalized(weights), f"renormalised weights of shape {tuple(weights.shape)}",
                     device=student.device, picture="causal", suspects=renormalize_suspects(weights),
                     probes=renorm_probes(got, weights))


@graded("masking: mask_and_renormalize rows sum to one and the future is zero", weight=1)
def test_renormalize_properties(student):
    weights = torch.softmax(randn(2, 6, 6, seed=2), dim=-1)
    with named_crashes():
        got = expect_tensor(student.call("mask_and_renormalize", weights), "renormalised weights", shape=(2, 6, 6))
    expect_future_hidden(got, "renormalised weights", student.device, observations=renorm_probes(got, weights)())
    expect_rows_sum_to_one(got, "the renormalised weights", student.device, causal=True, probe="renorm",
                           observations=renorm_probes(got, weights)()[1:])
    with named_crashes():
        other = expect_tensor(student.call("mask_and_renormalize", weights.flip(-1)), "renormalised weights",
                              shape=(2, 6, 6))
    expect_computed_from(got, other, "mask_and_renormalize's output", "the weights it is given change")


def causal_probes(got, scores, d_k):
    """Rows, temperature and mask pattern of causal weights returned for known scores."""
    def probes():
        found = [observation("rows", rows_outcome(got, causal=True))]
        temperature = temperature_observation(got, scores, scale_table(d_k, tokens=scores.shape[-1]), causal=True)
        pattern = pattern_outcome(got)
        return (found + temperature
                + ([observation("pattern", pattern)] if pattern else []))

    return probes


@graded("masking: causal_attention_weights matches the reference on a batch", weight=3)
def test_causal_weights(student):
    for shape, d_k in (((5, 5), 3), ((2, 6, 6), 7)):
        scores = randn(*shape, seed=3, scale=2.0)
        with named_crashes():
            got = student.call("causal_attention_weights", scores, d_k)
        n = shape[-1]
        zeroed_after = weights_of(scores, d_k, causal=False) * torch.tril(torch.ones(n, n, dtype=torch.float64))
        expect_close(got, weights_of(scores, d_k), f"causal attention weights for scores of shape {shape}",
                     device=student.device, picture="causal",
                     suspects=itertools.chain(
                         suspects(lambda faults: weights_of(scores, d_k, faults=faults), CAUSAL_FAULTS),
                         [("not_renormalised", zeroed_after)]),
                     probes=causal_probes(got, scores, d_k))
    expect_no_overflow(student, "causal_attention_weights", True, "causal attention weights")


@graded("masking: causal_attention_weights ignores the scores of future positions", weight=2)
def test_causal_ignores_future(student):
    scores = randn(2, 6, 6, seed=4)
    future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    perturbed = scores + future * randn(2, 6, 6, seed=5, scale=10.0)
    with named_crashes():
        first = expect_tensor(student.call("causal_attention_weights", scores, 4), "causal attention weights",
                              shape=(2, 6, 6))
        second = expect_tensor(student.call("causal_attention_weights", perturbed, 4), "causal attention weights",
                               shape=(2, 6, 6))
    changed = (first - second).abs() > 1e-6
    if changed.any():
        index = changed.nonzero()[0].tolist()
        fail(f"changing only the scores above the diagonal changed weight {index}: the future influences the "
             "weights", [observation("future_scores", "leak")] + causal_probes(first, scores, 4)())
    past = scores + ~future * randn(2, 6, 6, seed=8, scale=2.0)  # weights that ignore every score ignore these too
    with named_crashes():
        third = expect_tensor(student.call("causal_attention_weights", past, 4), "causal attention weights",
                              shape=(2, 6, 6))
    expect_computed_from(first, third, "causal_attention_weights' output", "the scores on and below the diagonal "
                         "change")


@graded("masking: causal_attention_weights rows sum to one and the future is zero", weight=1)
def test_causal_properties(student):
    scores = randn(3, 7, 7, seed=6, scale=4.0)
    with named_crashes():
        got = expect_tensor(student.call("causal_attention_weights", scores, 5), "causal attention weights")
    probes = causal_probes(got, scores, 5)
    expect_future_hidden(got, "causal attention weights", student.device, observations=probes)
    expect_rows_sum_to_one(got, "the causal attention weights", student.device, causal=True, observations=probes)
    with named_crashes():
        other = expect_tensor(student.call("causal_attention_weights", scores.flip(-2), 5), "causal attention weights",
                              shape=tuple(got.shape))
    expect_computed_from(got, other, "causal_attention_weights' output", "the scores change")
