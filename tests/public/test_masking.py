"""Step 3 (masking): public checks. Run them with `make check STEP=masking`."""

import torch
from grader.check.book import BOOK_ATOL, SEED789_MASKED_WEIGHTS, SEED789_SCORES_LOWER, SEED789_WEIGHTS
from grader.check import public_inputs

from grader.check.causes import observation
from grader.check.signatures import (future_scores_observation, mask_dtype_observations, mask_outcome,
                                     pattern_outcome, renorm_outcome, rows_outcome, scale_table,
                                     temperature_observation, temperature_outcome)
from grader.check.student import StudentError
from grader.check.testing import (diagnosed, expect_future_hidden, expect_rows_sum_to_one, expect_tensor, fail, graded,
                                  once, seeded)

# A printout check weighs little: its printed values could be returned without any of the work. The
# step's property checks carry its points instead (a step's weights add up to its points).
BOOK_WEIGHT = 0.25


def renorm_probes(student, weights):
    """Row sums and hidden positions of mask_and_renormalize's output."""
    def probes():
        got = student.call("mask_and_renormalize", weights)
        pattern = pattern_outcome(got)
        return ([observation("renorm", renorm_outcome(got, weights))]
                + ([observation("pattern", pattern)] if pattern else []))

    return probes


def square_batch_probe(student, d_k, tokens=5):
    """When causal_attention_weights raises on a batch of scores: a batch of as many sequences as tokens. If that
    runs and gives weights whose rows sum to one with exactly the future hidden, while another batch size raises,
    the mask is sized from the batch axis (the one repair the inputs can make; the code is not changed)."""
    with seeded(11):
        other, square = torch.randn(tokens - 2, tokens, tokens), torch.randn(tokens, tokens, tokens)
    try:
        student.call("causal_attention_weights", other, d_k)
        return []  # other batch sizes run: this is not the story
    except StudentError:
        pass
    try:
        got = student.call("causal_attention_weights", square, d_k)
    except StudentError:
        return []
    if rows_outcome(got, causal=True) == "ok" and pattern_outcome(got) == "ok":
        return [observation("batch_size", "tokens")]
    return []


def causal_probes(student, scores, d_k):
    """Row sums, softmax scale (of the visible part) and hidden positions of causal_attention_weights; when it
    raises on these scores, whether a batch as large as the sequence is long runs (square_batch_probe)."""
    def probes():
        try:
            got = student.call("causal_attention_weights", scores, d_k)
        except StudentError:
            return square_batch_probe(student, d_k) if scores.dim() == 3 else []
        found = [observation("rows", rows_outcome(got, causal=True))]
        temperature = temperature_observation(got, scores, scale_table(d_k, tokens=scores.shape[-1]), causal=True)
        pattern = pattern_outcome(got)
        # The future's scores changed: weights that move see the future (the mask has no effect); weights that
        # keep weight on the future but do not move had the hidden scores replaced by a constant (measured).
        tokens = scores.shape[-1]
        moved = scores + 3.0 * torch.triu(torch.ones(tokens, tokens), diagonal=1)
        future = future_scores_observation(got, student.call("causal_attention_weights", moved, d_k), scores, d_k)
        return (found + temperature + future
                + ([observation("pattern", pattern)] if pattern else []))

    return probes


@graded("masking: causal_mask is a bool (n, n) mask, True strictly above the diagonal", weight=3)
def test_causal_mask(student):
    # 6 here; grading asks for another size, beyond what a table typed by hand would hold (grader.check.public_inputs)
    n = public_inputs.size(6, 13, 40)
    with diagnosed(lambda: []):
        returned = student.call("causal_mask", n)
    mask = expect_tensor(returned, f"causal_mask({n})", shape=(n, n))  # (a float mask comes back as float64)
    if mask.dtype != torch.bool:
        fail(f"causal_mask should return a bool tensor, yours is {returned.dtype}; use .bool()",
             mask_dtype_observations(mask))
    for i in range(n):
        for j in range(n):
            if bool(mask[i, j]) != (j > i):
                state = "hidden" if mask[i, j] else "visible"
                outcome = mask_outcome(mask)
                fail(f"causal_mask({n})[{i}, {j}] says position {j} is {state} for token {i} (True means hidden, "
                     "and token i hides exactly the positions j > i)",
                     [observation("pattern", outcome)] if outcome else [])


@graded("masking: masking and renormalising reproduces the chapter", weight=BOOK_WEIGHT, book=True)
def test_book_masking(student):
    with diagnosed(renorm_probes(student, SEED789_WEIGHTS)):
        renormalized = student.call("mask_and_renormalize", SEED789_WEIGHTS)
        renormalized = expect_tensor(renormalized, "mask_and_renormalize output", shape=(6, 6))
        assert torch.allclose(renormalized.float(), SEED789_MASKED_WEIGHTS, atol=2e-3), (
            "mask_and_renormalize differs from the chapter's printout")
    # The future scores were not printed (they are masked): any value there must give the same weights.
    with seeded(1):
        scores = SEED789_SCORES_LOWER + torch.triu(torch.randn(6, 6), diagonal=1)
    with diagnosed(causal_probes(student, scores, 2)):
        weights = student.call("causal_attention_weights", scores, 2)
        weights = expect_tensor(weights, "causal_attention_weights output", shape=(6, 6))
        assert torch.allclose(weights.float(), SEED789_MASKED_WEIGHTS, atol=BOOK_ATOL * 5), (
            "causal_attention_weights differs from the chapter")


@graded("masking: causal weights sum to one per row and give the future zero weight", weight=1.75)
def test_causal_properties(student):
    with seeded(0):
        scores = torch.randn(3, 5, 5) * 2
    probes = once(causal_probes(student, scores, 4))
    with diagnosed(probes):
        weights = expect_tensor(student.call("causal_attention_weights", scores, 4), "causal attention weights",
                                shape=(3, 5, 5))
        expect_future_hidden(weights, "causal attention weights", observations=probes)
        expect_rows_sum_to_one(weights, "the causal attention weights", observations=probes)
        # Read from this call's own weights (a second call could answer differently).
        if temperature_outcome(weights, scores, scale_table(4, tokens=5), causal=True) != "ok":
            fail("the visible weights are not softmax(scores / sqrt(d_k))", probes())
