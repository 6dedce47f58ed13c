"""Step 5 (causal_attention): hidden checks."""

from .oracle import linear_attention, qkv_params, randn, suspects
from .probes import (batch_mixed, causal_leak, check_lengths, check_module_dropout,
                     expect_attention_from_queries_and_keys, expect_finite_for_large_scores, large_tokens, once,
                     probe_params, prober, read_weights)

from grader.check.causes import observation
from grader.check.signatures import Dims
from grader.check.testing import expect_close, expect_future_hidden, expect_rows_sum_to_one, fail, graded, named_crashes

B, N, CONTEXT, D_IN, D_OUT = 3, 5, 7, 8, 6
FAULTS = ("softmax_dim", "softmax_batch", "no_scale", "scale_dk", "scale_after", "scale_multiplied", "scale_d_in",
          "scale_num_tokens", "zero_fill", "no_mask", "mask_past", "mask_past_diagonal", "mask_hides_diagonal",
          "mask_off_by_one", "scores_kq")
DIMS = Dims(d_in=D_IN, d_out=D_OUT, n=N, context=CONTEXT, batch=B)  # scales sqrt(6), 1, 6, sqrt(8), sqrt(5)


def build(student, dropout=0.0, qkv_bias=False, params=None, context=CONTEXT):
    return student.build("CausalAttention", D_IN, D_OUT, context, dropout, qkv_bias=qkv_bias, seed=0, weights=params)


def uses_queries_and_keys(student, probes):
    once(student, "CausalAttention uses queries and keys", lambda: _uses_queries_and_keys(student, probes))


def _uses_queries_and_keys(student, probes):
    with named_crashes(probes):
        expect_attention_from_queries_and_keys(lambda runs: student.outputs_of("CausalAttention", D_IN, D_OUT, CONTEXT,
                                                                               0.0, qkv_bias=False, seed=0,
                                                                               runs=runs),
                                               qkv_params(D_IN, D_OUT, seed=13), randn(B, N, D_IN, seed=14),
                                               student.device, probes)


def check_against_reference(student, x, params, bias, what):
    probes = prober(student, "CausalAttention", DIMS)
    with named_crashes(probes):
        out = build(student, dropout=0.3, qkv_bias=bias, params=params).forward(x, train=False)
    expect_close(out, linear_attention(x, params, causal=True), what, device=student.device,
                 suspects=suspects(lambda faults: linear_attention(x, params, True, faults), FAULTS), probes=probes)


@graded("causal_attention: with injected weights the output matches the reference (eval mode)", weight=4)
def test_injected(student):
    x = randn(B, N, D_IN, seed=1)
    check_against_reference(student, x, qkv_params(D_IN, D_OUT, seed=2), False, "CausalAttention outputs")


@graded("causal_attention: qkv_bias=True adds biases to the projections, and they are used", weight=2)
def test_bias(student):
    x = randn(B, N, D_IN, seed=3)
    check_against_reference(student, x, qkv_params(D_IN, D_OUT, seed=4, bias=True), True,
                            "CausalAttention outputs with qkv_bias=True")


@graded("causal_attention: each row of the attention weights sums to one and hides the future", weight=2)
def test_weights_through_values(student):
    probes = prober(student, "CausalAttention", DIMS)
    with named_crashes(probes):
        module = build(student, qkv_bias=True)
        weights = read_weights(module, probe_params(D_IN, D_OUT, N), B, N, D_IN, heads=1)
    uses_queries_and_keys(student, probes)
    what = "the attention weights (read through one-hot values)"
    expect_future_hidden(weights, what, student.device, observations=probes)
    expect_rows_sum_to_one(weights, what, student.device, causal=True, observations=probes)
    expect_finite_for_large_scores(module, qkv_params(D_IN, D_OUT, seed=15, bias=True), large_tokens(B, N, D_IN, 16),
                                   "CausalAttention outputs", probes)


@graded("causal_attention: changing future tokens does not change earlier outputs", weight=2)
def test_causality(student):
    probes = prober(student, "CausalAttention", DIMS)
    with named_crashes(probes):
        leak = causal_leak(build(student, params=qkv_params(D_IN, D_OUT, seed=5)), randn(B, N, D_IN, seed=6),
                           student.device)
    uses_queries_and_keys(student, probes)
    if leak is not None:
        fail(f"changing tokens {leak + 1}.. changed the output of token {leak} or earlier: information leaks "
             "from the future", [observation("causality", "leak")] + probes())


@graded("causal_attention: each sequence in a batch is processed independently", weight=2)
def test_batch_independence(student):
    probes = prober(student, "CausalAttention", DIMS)
    with named_crashes(probes):
        mixed = batch_mixed(build(student, params=qkv_params(D_IN, D_OUT, seed=8)), randn(B, N, D_IN, seed=9),
                            student.device)
    uses_queries_and_keys(student, probes)
    if mixed:
        fail("changing sequence 1 of the batch changed the outputs of the other sequences",
             [observation("batch", "mixed")] + probes())


@graded("causal_attention: eval mode is deterministic; training drops and rescales attention weights", weight=2)
def test_dropout_in_module(student):
    check_module_dropout(student, "CausalAttention", DIMS)


@graded("causal_attention: works for one token and for a full context_length", weight=1)
def test_lengths(student):
    params = qkv_params(D_IN, D_OUT, seed=11)
    probes = prober(student, "CausalAttention", DIMS)
    with named_crashes(probes):
        module = build(student, params=params)
    check_lengths(module, (1, CONTEXT), lambda x: linear_attention(x, params, causal=True),
                  lambda n: randn(2, n, D_IN, seed=12 + n), "CausalAttention outputs", student.device,
                  lambda x: suspects(lambda faults: linear_attention(x, params, True, faults), FAULTS), probes)

