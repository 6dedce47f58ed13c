"""Step 2 (scaling): public checks. Run them with `make check STEP=scaling`."""

import torch
from grader.check.book import (BOOK_ATOL, INPUTS_3D, INPUTS_3D_SEED100, INPUTS_8D, SA_V1_SEED100, SA_V2_8D_SEED789, SA_V2_SEED100,
                          SA_V2_SEED789, SEED123_8D_CONTEXT, SEED123_8D_SCORES, SEED123_8D_WEIGHTS,
                          SEED123_CONTEXT_2, SEED123_SCORES_2, SEED123_WEIGHTS_2, seeded_rand_weights)

from grader.check.testing import expect_rows_sum_to_one, expect_tensor, graded, scalar, seeded


def book_close(actual, printed, what, advice):
    actual = expect_tensor(actual, what, shape=printed.shape)
    assert torch.allclose(actual.float(), printed, atol=BOOK_ATOL), f"{what} differ from the chapter's printout; {advice}"


@graded("scaling: scores, weights and context vectors match the chapter (seed 123)", weight=1)
def test_book_step_by_step(student):
    for inputs, d_out, scores, weights, context, row in (
        (INPUTS_3D, 2, SEED123_SCORES_2, SEED123_WEIGHTS_2, SEED123_CONTEXT_2, 1),
        (INPUTS_8D, 4, SEED123_8D_SCORES, SEED123_8D_WEIGHTS, SEED123_8D_CONTEXT, slice(None)),
    ):
        W_query, W_key, W_value = seeded_rand_weights(123, inputs.shape[1], d_out)
        queries, keys, values = inputs @ W_query, inputs @ W_key, inputs @ W_value
        got_scores = expect_tensor(student.call("attention_scores", queries, keys), "attention scores",
                                   shape=(len(inputs), len(inputs)))
        book_close(got_scores[row], scores, "attention scores", "scores[i, j] is query i · key j")
        got_weights = student.call("scaled_attention_weights", got_scores.float(), d_out)
        got_weights = expect_tensor(got_weights, "attention weights", shape=(len(inputs), len(inputs)))
        book_close(got_weights[row], weights, "attention weights", "softmax(scores / sqrt(d_k)) along each row")
        got_context = student.call("context_vectors", got_weights.float(), values)
        got_context = expect_tensor(got_context, "context vectors", shape=(len(inputs), d_out))
        book_close(got_context[row], context, "context vectors", "weights @ values")


@graded("scaling: attention weights are positive and each row sums to one", weight=1)
def test_rows_sum_to_one(student):
    with seeded(0):
        scores = torch.randn(2, 5, 5) * 3
    weights = expect_tensor(student.call("scaled_attention_weights", scores, 9), "attention weights", shape=(2, 5, 5))
    assert (weights > 0).all(), "every attention weight should be positive (softmax never gives 0 here)"
    expect_rows_sum_to_one(weights, "the attention weights")


@graded("scaling: dot_product_variance shows the scaling keeps the variance near 1", weight=1)
def test_variance_rationale(student):
    result = student.call("dot_product_variance", 64, seed=0)
    assert isinstance(result, tuple) and len(result) == 2, "return (variance_before, variance_after)"
    before = scalar(result[0], "variance_before")
    after = scalar(result[1], "variance_after")
    assert 40 < before < 90, (f"for dim=64 the variance of q·k should be close to 64, yours is {before:.3g}; "
                              "draw q and k with torch.randn (standard normal)")
    assert 0.6 < after < 1.4, (f"after dividing by sqrt(64) the variance should be close to 1, yours is {after:.3g}")


@graded("scaling: SelfAttention_v1 reproduces the chapter (seeds 100 and 123)", weight=1)
def test_v1_book(student):
    advice = ("create W_query, W_key, W_value in that order as nn.Parameter(torch.rand(d_in, d_out)), "
              "and scale by sqrt(d_k)")
    module = student.build("SelfAttention_v1", 3, 2, seed=100)
    book_close(module.forward(INPUTS_3D_SEED100), SA_V1_SEED100, "SelfAttention_v1(3, 2) outputs (seed 100)", advice)
    module = student.build("SelfAttention_v1", 8, 4, seed=123)
    book_close(module.forward(INPUTS_8D), SEED123_8D_CONTEXT, "SelfAttention_v1(8, 4) outputs (seed 123)", advice)


@graded("scaling: SelfAttention_v2 reproduces the chapter (seeds 789 and 100)", weight=1)
def test_v2_book(student):
    advice = ("create W_query, W_key, W_value in that order as nn.Linear(d_in, d_out, bias=qkv_bias) "
              "and nothing else random before them")
    for d_in, d_out, seed, inputs, printed in (
        (3, 2, 789, INPUTS_3D, SA_V2_SEED789),
        (3, 2, 100, INPUTS_3D_SEED100, SA_V2_SEED100),
        (8, 4, 789, INPUTS_8D, SA_V2_8D_SEED789),
    ):
        module = student.build("SelfAttention_v2", d_in, d_out, seed=seed)
        book_close(module.forward(inputs), printed, f"SelfAttention_v2({d_in}, {d_out}) outputs (seed {seed})", advice)
