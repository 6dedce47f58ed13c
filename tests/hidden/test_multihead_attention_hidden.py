"""Step 7 (multihead_attention): hidden checks."""

import torch
from .oracle import linear_attention, linear_params, multihead, qkv_params, randn, suspects
from .probes import (batch_mixed, causal_leak, check_lengths, check_module_dropout,
                     expect_attention_from_queries_and_keys, expect_finite_for_large_scores, large_tokens, once,
                     probe_params, prober, read_weights)

from grader.check.causes import observation
from grader.check.signatures import Dims
from grader.check.testing import (expect_close, expect_future_hidden, expect_rows_sum_to_one, fail, graded,
                                  named_crashes)

B, N, CONTEXT, D_IN, D_OUT, HEADS = 3, 5, 7, 6, 8, 2  # head_dim = 4
FAULTS = ("split_no_transpose", "merge_no_transpose", "no_out_proj", "scale_d_out", "scale_d_in", "scale_num_heads",
          "scale_num_tokens", "scale_multiplied", "softmax_dim", "softmax_batch", "softmax_heads", "no_scale",
          "scale_dk", "scale_after", "zero_fill", "no_mask", "mask_past", "mask_past_diagonal", "mask_hides_diagonal",
          "mask_off_by_one", "scores_kq", "out_proj_activation")
# The probes' sizes: head_dim 5 >= 4 tokens (the value trick), and every wrong scale differs:
# sqrt(5), 1, 5, sqrt(7) (d_in), sqrt(10) (d_out), sqrt(2) (heads), sqrt(4) (tokens).
DIMS = Dims(d_in=7, d_out=10, n=4, heads=2, context=6, batch=3)


def mha_params(seed, bias=False, d_in=D_IN, d_out=D_OUT):
    params = qkv_params(d_in, d_out, seed, bias=bias)
    params.update(linear_params("out_proj", d_out, d_out, seed + 100, bias=True))
    return params


def build(student, d_in=D_IN, d_out=D_OUT, heads=HEADS, dropout=0.0, qkv_bias=False, params=None):
    return student.build("MultiHeadAttention", d_in, d_out, CONTEXT, dropout, heads, qkv_bias=qkv_bias, seed=0,
                         weights=params)


def probes_of(student):
    return prober(student, "MultiHeadAttention", DIMS)


def uses_queries_and_keys(student, probes):
    once(student, "MultiHeadAttention uses queries and keys", lambda: _uses_queries_and_keys(student, probes))


def _uses_queries_and_keys(student, probes):
    with named_crashes(probes):
        expect_attention_from_queries_and_keys(lambda runs: student.outputs_of("MultiHeadAttention", D_IN, D_OUT,
                                                                               CONTEXT, 0.0, HEADS, qkv_bias=False,
                                                                               seed=0, runs=runs), mha_params(13),
                                               randn(B, N, D_IN, seed=14), student.device, probes)


def check_against_reference(student, x, params, qkv_bias, what, heads=HEADS, d_out=D_OUT):
    probes = probes_of(student)
    with named_crashes(probes):
        out = build(student, d_out=d_out, heads=heads, dropout=0.3, qkv_bias=qkv_bias, params=params).forward(
            x, train=False)
    expect_close(out, multihead(x, params, heads), what, device=student.device,
                 suspects=suspects(lambda faults: multihead(x, params, heads, faults), FAULTS), probes=probes)


@graded("multihead_attention: with injected weights the output matches the reference (eval mode)", weight=4)
def test_injected(student):
    x = randn(B, N, D_IN, seed=1)
    check_against_reference(student, x, mha_params(2), False, "MultiHeadAttention outputs (2 heads of size 4)")
    check_against_reference(student, x, mha_params(3, d_out=9), False,
                            "MultiHeadAttention outputs (3 heads of size 3)", heads=3, d_out=9)


@graded("multihead_attention: equals the wrapper of single heads when given their weights", weight=3)
def test_matches_wrapper(student):
    head_dim = D_OUT // HEADS
    heads = [qkv_params(D_IN, head_dim, seed=10 * h) for h in range(HEADS)]
    x = randn(B, N, D_IN, seed=4)
    wrapper = torch.cat([linear_attention(x, params, causal=True) for params in heads], dim=-1)
    combined = {f"{role}.weight": torch.cat([params[f"{role}.weight"] for params in heads], dim=0)
                for role in ("W_query", "W_key", "W_value")}
    combined.update({"out_proj.weight": torch.eye(D_OUT), "out_proj.bias": torch.zeros(D_OUT)})
    probes = probes_of(student)
    with named_crashes(probes):
        out = build(student, params=combined).forward(x)
    expect_close(out, wrapper, "MultiHeadAttention outputs with the heads' weights stacked", device=student.device,
                 probes=probes)


@graded("multihead_attention: each head's attention weights sum to one per row and hide the future", weight=2)
def test_weights_through_values(student):
    d_out, heads = 12, 2  # head_dim 6 >= N tokens, so every head's weights can be read off
    probes = probes_of(student)
    with named_crashes(probes):
        module = build(student, d_out=d_out, heads=heads, qkv_bias=True)
        weights = read_weights(module, probe_params(D_IN, d_out, N, heads=heads, out_proj=True), B, N, D_IN, heads)
    uses_queries_and_keys(student, probes)
    what = "the attention weights of every head (read through one-hot values)"
    expect_future_hidden(weights, what, student.device, observations=probes)
    expect_rows_sum_to_one(weights, what, student.device, causal=True, observations=probes)
    expect_finite_for_large_scores(module, mha_params(15, bias=True, d_out=d_out), large_tokens(B, N, D_IN, 16),
                                   "MultiHeadAttention outputs", probes)


@graded("multihead_attention: changing future tokens does not change earlier outputs", weight=2)
def test_causality(student):
    probes = probes_of(student)
    with named_crashes(probes):
        leak = causal_leak(build(student, params=mha_params(5)), randn(B, N, D_IN, seed=6), student.device)
    uses_queries_and_keys(student, probes)
    if leak is not None:
        fail(f"changing tokens {leak + 1}.. changed the output of token {leak} or earlier: information leaks "
             "from the future", [observation("causality", "leak")] + probes())


@graded("multihead_attention: each sequence in a batch is processed independently", weight=1)
def test_batch_independence(student):
    probes = probes_of(student)
    with named_crashes(probes):
        mixed = batch_mixed(build(student, params=mha_params(8)), randn(B, N, D_IN, seed=9), student.device)
    uses_queries_and_keys(student, probes)
    if mixed:
        fail("changing sequence 1 of the batch changed the outputs of the other sequences",
             [observation("batch", "mixed")] + probes())


@graded("multihead_attention: eval mode is deterministic; training applies dropout to the weights", weight=1)
def test_dropout(student):
    check_module_dropout(student, "MultiHeadAttention", DIMS)


@graded("multihead_attention: qkv_bias and the out_proj bias are used", weight=1)
def test_biases(student):
    x = randn(B, N, D_IN, seed=11)
    check_against_reference(student, x, mha_params(12, bias=True), True, "MultiHeadAttention outputs with biases")


@graded("multihead_attention: works for one token and for a full context_length", weight=1)
def test_lengths(student):
    params = mha_params(13)
    probes = probes_of(student)
    with named_crashes(probes):
        module = build(student, params=params)
    check_lengths(module, (1, CONTEXT), lambda x: multihead(x, params, HEADS),
                  lambda n: randn(2, n, D_IN, seed=14 + n), "MultiHeadAttention outputs", student.device,
                  lambda x: suspects(lambda faults: multihead(x, params, HEADS, faults), FAULTS), probes)
