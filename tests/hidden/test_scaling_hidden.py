"""Step 2 (scaling): hidden checks."""

import math

import torch
from .oracle import expect_no_overflow, linear_attention, linear_params, randn, self_attention, suspects, weights_of
from .probes import check_draws, module_observations

from grader.check.causes import observation
from grader.check.signatures import (Dims, rows_outcome, scale_table, scores_observations, temperature_observation,
                                     variance_observation)
from grader.check.testing import Failure, expect_close, expect_tensor, fail, graded, named_crashes, scalar

WEIGHT_FAULTS = ("softmax_dim", "softmax_batch", "no_scale", "scale_dk", "scale_after", "scale_multiplied")
MODULE_FAULTS = WEIGHT_FAULTS + ("scores_kq", "scale_d_in", "scale_num_tokens")
MODULE_DIMS = Dims(d_in=6, d_out=5, n=4)  # every wrong scale differs: sqrt(5), 1, 5, sqrt(6), sqrt(4)


@graded("scaling: attention_scores match queries @ keys^T, batched", weight=2)
def test_scores(student):
    for shape in ((5, 3), (2, 5, 3)):
        queries, keys = randn(*shape, seed=1), randn(*shape, seed=2)
        with named_crashes(lambda: scores_observations(student)):
            got = student.call("attention_scores", queries, keys)
        n = shape[-2]
        got = expect_tensor(got, f"attention scores for inputs of shape {shape}", shape=shape[:-1] + (n,))
        expected = queries.double() @ keys.double().transpose(-2, -1)
        expect_close(got, expected, f"attention scores for inputs of shape {shape}", device=student.device,
                     suspects={"scores_kq": expected.transpose(-2, -1)})


def weight_probes(got, scores, d_k):
    """Rows and softmax temperature of weights returned for known scores."""
    def probes():
        found = [observation("rows", rows_outcome(got))]
        return found + temperature_observation(got, scores, scale_table(d_k, tokens=scores.shape[-1]))

    return probes


@graded("scaling: scaled_attention_weights = softmax(scores / sqrt(d_k)) along each row", weight=2)
def test_scaled_weights(student):
    for shape, d_k in (((5, 5), 9), ((3, 4, 4), 16)):
        scores = randn(*shape, seed=3, scale=3.0)
        with named_crashes():
            got = student.call("scaled_attention_weights", scores, d_k)
        expected = weights_of(scores, d_k, causal=False)
        expect_close(got, expected, f"attention weights for scores of shape {shape} and d_k={d_k}",
                     device=student.device, picture="full",
                     suspects=suspects(lambda faults: weights_of(scores, d_k, causal=False, faults=faults),
                                       WEIGHT_FAULTS),
                     probes=weight_probes(got, scores, d_k))
    expect_no_overflow(student, "scaled_attention_weights", False, "attention weights")


@graded("scaling: context_vectors are the weighted sums of the values, batched", weight=1)
def test_context(student):
    weights = torch.softmax(randn(2, 5, 5, seed=4), dim=-1)
    values = randn(2, 5, 3, seed=5)
    with named_crashes():
        got = student.call("context_vectors", weights, values)
    expected = weights.double() @ values.double()
    expect_close(got, expected, "context vectors", device=student.device,
                 suspects={"context_transposed": weights.double().transpose(-2, -1) @ values.double(),
                           "context_own_value": weights.double().sum(-1, keepdim=True) * values.double()})


@graded("scaling: dot_product_variance grows with dim and scaling by sqrt(dim) undoes it", weight=1)
def test_variance(student):
    # Enough trials that a correct estimate lies far inside the bounds below (relative standard error of the
    # variance: about 5 % at dim=5 with 2000 trials, 4.5 % at dim=100 with 1000; the bounds are -25 %/+30 %).
    for dim, trials in ((5, 2000), (100, 1000)):
        result = student.call("dot_product_variance", dim, num_trials=trials, seed=3)
        assert isinstance(result, (tuple, list)) and len(result) == 2, "return (variance_before, variance_after)"
        before = scalar(result[0], "variance_before")
        after = scalar(result[1], "variance_after")
        if not 0.75 * dim < before < 1.3 * dim:  # what it measures instead, said with its value
            fail(f"for dim={dim} the variance of q·k should be close to {dim}", variance_observation(before, dim))
        if not math.isclose(after * dim, before, rel_tol=1e-3):
            cause = ("variance_over_dim" if math.isclose(after * dim * dim, before, rel_tol=1e-3) else
                     "variance_not_recomputed" if math.isclose(after * math.sqrt(dim), before, rel_tol=1e-3)
                     else None)
            raise Failure(f"for dim={dim}, variance_after * dim = {after * dim:.4g} but variance_before = "
                          f"{before:.4g}; dividing each dot product by sqrt(dim) divides the variance by dim",
                          cause=cause)
    # The function's own `seed` goes positionally (dim, num_trials, seed): Student.call's `seed` keyword seeds
    # torch's global generator before the call, which is what a function ignoring its `seed` would draw from.
    first = scalar(student.call("dot_product_variance", 8, 500, 11, seed=1)[0], "variance_before")
    again = scalar(student.call("dot_product_variance", 8, 500, 11, seed=2)[0], "variance_before")
    other = scalar(student.call("dot_product_variance", 8, 500, 12, seed=1)[0], "variance_before")
    if first != again or first == other:
        raise Failure("dot_product_variance should draw from a generator seeded with its `seed` argument: the same "
                      "seed should give the same result, another seed another one "
                      "(torch.Generator().manual_seed(seed), passed to torch.randn)", cause="variance_not_seeded")


@graded("scaling: SelfAttention_v1 creates W_query, W_key, W_value in that order with torch.rand", weight=1)
def test_v1_draws(student):
    d_in, d_out = 4, 3
    with named_crashes():
        module = student.build("SelfAttention_v1", d_in, d_out, seed=5)
        state = module.state()
    missing = [role for role in ("W_query", "W_key", "W_value") if state.get(role) is None]
    if missing:  # not "returned None": the matrix is no parameter of the module (a plain tensor, or another name)
        plain = [role for role in missing if role in module.describe()["plain_tensors"]]
        if plain:
            raise Failure(f"SelfAttention_v1.{plain[0]} is a plain tensor, not a parameter of the module: wrap it in "
                          "nn.Parameter(...)", cause="weights_not_parameters")
        raise Failure(f"SelfAttention_v1 has no parameter named {missing[0]}: keep the chapter's names W_query, "
                      "W_key and W_value, each an nn.Parameter")
    check_draws(state, d_in, d_out, seed=5, what="SelfAttention_v1.")


def module_probes(student, name):
    found = []

    def probes():
        if not found:
            found.append(module_observations(student, name, MODULE_DIMS, causal=False))
        return found[0]

    return probes


@graded("scaling: SelfAttention_v1 with injected weights matches the reference", weight=1)
def test_v1_injected(student):
    d_in, d_out, n = 5, 3, 4
    params = {role: randn(d_in, d_out, seed=seed) for role, seed in (("W_query", 1), ("W_key", 2), ("W_value", 3))}
    probes = module_probes(student, "SelfAttention_v1")
    x = randn(n, d_in, seed=4)
    with named_crashes(probes):
        module = student.build("SelfAttention_v1", d_in, d_out, seed=0, weights=params)
        out = module.forward(x)
    expected = self_attention(x, params["W_query"], params["W_key"], params["W_value"])
    expect_close(out, expected, "SelfAttention_v1 outputs", device=student.device,
                 suspects=suspects(lambda faults: self_attention(x, *params.values(), faults=faults),
                                   MODULE_FAULTS + ("no_projection",)), probes=probes)


@graded("scaling: SelfAttention_v2 with injected weights and qkv_bias matches the reference", weight=2)
def test_v2_injected(student):
    d_in, d_out, n = 5, 3, 4
    x = randn(n, d_in, seed=4)
    probes = module_probes(student, "SelfAttention_v2")
    for bias in (False, True):
        params = {}
        for offset, role in enumerate(("W_query", "W_key", "W_value")):
            params.update(linear_params(role, d_in, d_out, seed=10 * offset + 1, bias=bias))
        with named_crashes(probes):
            module = student.build("SelfAttention_v2", d_in, d_out, qkv_bias=bias, seed=0, weights=params)
            out = module.forward(x)
        expected = linear_attention(x, params, causal=False)
        what = f"SelfAttention_v2 outputs (qkv_bias={bias})"
        expect_close(out, expected, what, device=student.device,
                     suspects=suspects(lambda faults: linear_attention(x, params, False, faults), MODULE_FAULTS),
                     probes=probes)
