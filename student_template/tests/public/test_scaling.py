"""Step 2 (scaling): public checks. Run them with `make check STEP=scaling`."""

import torch
from grader.check.book import (BOOK_ATOL, INPUTS_3D, INPUTS_3D_SEED100, INPUTS_8D, SA_V1_SEED100, SA_V2_8D_SEED789, SA_V2_SEED100,
                          SA_V2_SEED789, SEED123_8D_CONTEXT, SEED123_8D_SCORES, SEED123_8D_WEIGHTS,
                          SEED123_CONTEXT_2, SEED123_SCORES_2, SEED123_WEIGHTS_2, seeded_rand_weights)

from grader.check import public_inputs
from grader.check.causes import observation
from grader.check.signatures import (Dims, module_observations, rows_outcome, scale_table, temperature_observation,
                                     scores_observations, temperature_outcome, variance_observation)
from grader.check.student import StudentError
from grader.check.testing import (diagnosed, expect_computed_from, expect_rows_sum_to_one, expect_tensor, fail, graded,
                                  scalar, seeded)

# A printout check weighs little: its printed values could be returned without any of the work. The
# step's property checks carry its points instead (a step's weights add up to its points).
BOOK_WEIGHT = 0.25
# The public probes' sizes: every wrong scale differs (sqrt(5), 1, 5, sqrt(7) for d_in, sqrt(3) for the tokens).
MODULE_DIMS = Dims(d_in=7, d_out=5, n=3)


def book_close(actual, printed, what):
    actual = expect_tensor(actual, what, shape=printed.shape)
    assert torch.allclose(actual.float(), printed, atol=BOOK_ATOL), f"{what} differ from the chapter's printout"


def weight_probes(student, scores, d_k):
    """Rows and softmax scale of scaled_attention_weights on known scores."""
    def probes():
        weights = student.call("scaled_attention_weights", scores, d_k)
        found = [observation("rows", rows_outcome(weights))]
        return found + temperature_observation(weights, scores, scale_table(d_k, tokens=scores.shape[-1]))

    return probes


def step_probes(student, queries, keys, values, d_k):
    """The scores (keys @ queries^T?), the weights' rows and scale, the context (transposed weights?)."""
    def probes():
        found = scores_observations(student)  # on square inputs, where keys left untransposed do not raise
        scores = queries @ keys.T
        try:
            got = student.call("attention_scores", queries, keys)
        except StudentError:
            got = None
        if isinstance(got, torch.Tensor) and got.shape == scores.shape:
            found.append(observation("signature", matched=("scores_kq",) if torch.allclose(got.float(), scores.T)
                                     and not torch.allclose(scores, scores.T) else (), modelled=("scores_kq",)))
        found += weight_probes(student, scores, d_k)()
        weights = torch.softmax(scores / d_k**0.5, dim=-1)
        context = student.call("context_vectors", weights, values)
        if isinstance(context, torch.Tensor) and context.shape == values.shape:
            transposed = torch.allclose(context.float(), weights.T @ values, atol=1e-5)
            found.append(observation("signature", matched=("context_transposed",) if transposed else (),
                                     modelled=("context_transposed",)))
        return found

    return probes


@graded("scaling: scores, weights and context vectors match the chapter (seed 123)", weight=BOOK_WEIGHT, book=True)
def test_book_step_by_step(student):
    for inputs, d_out, scores, weights, context, row in (
        (INPUTS_3D, 2, SEED123_SCORES_2, SEED123_WEIGHTS_2, SEED123_CONTEXT_2, 1),
        (INPUTS_8D, 4, SEED123_8D_SCORES, SEED123_8D_WEIGHTS, SEED123_8D_CONTEXT, slice(None)),
    ):
        W_query, W_key, W_value = seeded_rand_weights(123, inputs.shape[1], d_out)
        queries, keys, values = inputs @ W_query, inputs @ W_key, inputs @ W_value
        with diagnosed(step_probes(student, queries, keys, values, d_out)):
            got_scores = expect_tensor(student.call("attention_scores", queries, keys), "attention scores",
                                       shape=(len(inputs), len(inputs)))
            book_close(got_scores[row], scores, "attention scores")
            got_weights = student.call("scaled_attention_weights", got_scores.float(), d_out)
            got_weights = expect_tensor(got_weights, "attention weights", shape=(len(inputs), len(inputs)))
            book_close(got_weights[row], weights, "attention weights")
            got_context = student.call("context_vectors", got_weights.float(), values)
            got_context = expect_tensor(got_context, "context vectors", shape=(len(inputs), d_out))
            book_close(got_context[row], context, "context vectors")


@graded("scaling: attention weights are positive and each row sums to one", weight=1.5)
def test_rows_sum_to_one(student):
    with seeded(0):
        scores = torch.randn(2, 5, 5) * 3
    with diagnosed(weight_probes(student, scores, 9)):
        weights = expect_tensor(student.call("scaled_attention_weights", scores, 9), "attention weights",
                                shape=(2, 5, 5))
        assert (weights > 0).all(), "some attention weights are not positive (a softmax never gives 0 here)"
        expect_rows_sum_to_one(weights, "the attention weights")
        other = expect_tensor(student.call("scaled_attention_weights", scores.flip(-1), 9), "attention weights",
                              shape=(2, 5, 5))
        expect_computed_from(weights, other, "scaled_attention_weights' output", "the scores change")


@graded("scaling: scaled_attention_weights divides the scores by sqrt(d_k) before the softmax", weight=1)
def test_scale(student):
    with seeded(2):
        scores = torch.randn(3, 6, 6) * 2
    probes = weight_probes(student, scores, 7)
    with diagnosed(probes):
        weights = expect_tensor(student.call("scaled_attention_weights", scores, 7), "attention weights",
                                shape=(3, 6, 6))
        # Read from this call's own weights (a second call could answer differently).
        if temperature_outcome(weights, scores, scale_table(7, tokens=6)) != "ok" or not torch.isfinite(weights).all():
            fail("the weights are not softmax(scores / sqrt(d_k)) along each row", probes())


@graded("scaling: dot_product_variance shows the scaling keeps the variance near 1", weight=1.75)
def test_variance_rationale(student):
    def measured(num_trials, seed):
        # The function's own seed argument, moved at grading as the check's seeds are (grader.check.public_inputs).
        result = student.call("dot_product_variance", 64, num_trials, public_inputs.seed(seed), seed=seed)
        assert isinstance(result, (tuple, list)) and len(result) == 2, "return (variance_before, variance_after)"
        return scalar(result[0], "variance_before"), scalar(result[1], "variance_after")

    before, after = measured(1000, 0)
    if not 40 < before < 90:  # what it measures instead, said with its value
        fail("for dim=64 the variance of q·k should be close to 64 (q and k are standard-normal vectors)",
             variance_observation(before, 64))
    assert 0.6 < after < 1.4, (f"after dividing by sqrt(64) the variance should be close to 1, yours is {after:.3g}")
    # A measurement moves with the number of trials and with the seed; the textbook's values (64, 1) returned as
    # they are do not, nor do numbers made up to move with num_trials.
    if measured(1500, 0) == (before, after):
        fail("dot_product_variance gives the very same numbers for 1000 and 1500 trials: it must measure the "
             "variance of q·k over num_trials random pairs, not return what theory predicts", [])
    if measured(1000, 1) == (before, after):
        fail("dot_product_variance gives the very same numbers for two different seeds: draw q and k from "
             "torch.Generator().manual_seed(seed), so that another seed measures other random pairs", [])


def module_probes(student, name):
    return lambda: module_observations(student, name, MODULE_DIMS, causal=False)


@graded("scaling: SelfAttention_v1 reproduces the chapter (seeds 100 and 123)", weight=BOOK_WEIGHT, book=True)
def test_v1_book(student):
    with diagnosed(module_probes(student, "SelfAttention_v1")):
        module = student.build("SelfAttention_v1", 3, 2, seed=100)
        book_close(module.forward(INPUTS_3D_SEED100), SA_V1_SEED100, "SelfAttention_v1(3, 2) outputs (seed 100)")
        module = student.build("SelfAttention_v1", 8, 4, seed=123)
        book_close(module.forward(INPUTS_8D), SEED123_8D_CONTEXT, "SelfAttention_v1(8, 4) outputs (seed 123)")


@graded("scaling: SelfAttention_v2 reproduces the chapter (seeds 789 and 100)", weight=BOOK_WEIGHT, book=True)
def test_v2_book(student):
    with diagnosed(module_probes(student, "SelfAttention_v2")):
        for d_in, d_out, seed, inputs, printed in (
            (3, 2, 789, INPUTS_3D, SA_V2_SEED789),
            (3, 2, 100, INPUTS_3D_SEED100, SA_V2_SEED100),
            (8, 4, 789, INPUTS_8D, SA_V2_8D_SEED789),
        ):
            module = student.build("SelfAttention_v2", d_in, d_out, seed=seed)
            book_close(module.forward(inputs), printed, f"SelfAttention_v2({d_in}, {d_out}) outputs (seed {seed})")
