"""Step 3 (masking): public checks. Run them with `make check STEP=masking`."""

import torch
from grader.check.book import BOOK_ATOL, SEED789_MASKED_WEIGHTS, SEED789_SCORES_LOWER, SEED789_WEIGHTS

from grader.check.testing import expect_future_hidden, expect_rows_sum_to_one, expect_tensor, graded, seeded


@graded("masking: causal_mask is a bool (n, n) mask, True strictly above the diagonal", weight=2)
def test_causal_mask(student):
    mask = student.call("causal_mask", 6)
    mask = expect_tensor(mask, "causal_mask(6)", shape=(6, 6))
    assert mask.dtype == torch.bool, f"causal_mask should return a bool tensor, yours is {mask.dtype}; use .bool()"
    for i in range(6):
        for j in range(6):
            if bool(mask[i, j]) != (j > i):
                state = "hidden" if mask[i, j] else "visible"
                raise AssertionError(
                    f"causal_mask(6)[{i}, {j}] says position {j} is {state} for token {i}; "
                    "True means hidden, and token i hides exactly the positions j > i")


@graded("masking: masking and renormalising reproduces the chapter", weight=2)
def test_book_masking(student):
    renormalized = student.call("mask_and_renormalize", SEED789_WEIGHTS)
    renormalized = expect_tensor(renormalized, "mask_and_renormalize output", shape=(6, 6))
    assert torch.allclose(renormalized.float(), SEED789_MASKED_WEIGHTS, atol=2e-3), (
        "mask_and_renormalize differs from the chapter's printout: zero the entries above the diagonal, "
        "then divide each row by its sum")
    # The future scores were not printed (they are masked): any value there must give the same weights.
    with seeded(1):
        scores = SEED789_SCORES_LOWER + torch.triu(torch.randn(6, 6), diagonal=1)
    weights = student.call("causal_attention_weights", scores, 2)
    weights = expect_tensor(weights, "causal_attention_weights output", shape=(6, 6))
    assert torch.allclose(weights.float(), SEED789_MASKED_WEIGHTS, atol=BOOK_ATOL * 5), (
        "causal_attention_weights differs from the chapter: fill the future with -inf, then "
        "softmax(scores / sqrt(d_k)) along each row")


@graded("masking: causal weights sum to one per row and give the future zero weight", weight=1)
def test_causal_properties(student):
    with seeded(0):
        scores = torch.randn(3, 5, 5) * 2
    weights = expect_tensor(student.call("causal_attention_weights", scores, 4), "causal attention weights",
                            shape=(3, 5, 5))
    expect_future_hidden(weights, "causal attention weights")
    expect_rows_sum_to_one(weights, "the causal attention weights")
