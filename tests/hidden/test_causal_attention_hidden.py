"""Step 5 (causal_attention): hidden checks."""

from .oracle import linear_attention, qkv_params, randn, suspects
from .probes import (check_batch_independent, check_causal, check_lengths, check_module_dropout, dropout_hits_weights,
                    ones_value_params, probe_params, probe_weights, weights_from_output)

from grader.check.testing import Failure, expect_close, expect_future_hidden, expect_rows_sum_to_one, expect_tensor, graded

B, N, CONTEXT, D_IN, D_OUT = 3, 5, 7, 8, 6
FAULTS = ("softmax_dim", "softmax_batch", "no_scale", "scale_dk", "scale_after", "scale_d_in", "zero_fill",
          "no_mask", "mask_past", "scores_kq")


def build(student, dropout=0.0, qkv_bias=False, params=None, context=CONTEXT):
    return student.build("CausalAttention", D_IN, D_OUT, context, dropout, qkv_bias=qkv_bias, seed=0, weights=params)


def check_against_reference(student, x, params, bias, what):
    module = build(student, dropout=0.3, qkv_bias=bias, params=params)
    expected = linear_attention(x, params, causal=True)
    expect_close(module.forward(x, train=False), expected, what, device=student.device,
                 advice="in eval mode the output is softmax(masked scores / sqrt(d_k)) @ values, no dropout",
                 suspects=suspects(lambda faults: linear_attention(x, params, True, faults), FAULTS))


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
    params = probe_params(D_IN, D_OUT, N)
    module = build(student, qkv_bias=True)
    out, _ = probe_weights(module, params, B, N, D_IN, D_OUT)
    weights = weights_from_output(expect_tensor(out, "CausalAttention output", shape=(B, N, D_OUT)), N, 1)
    what = "the attention weights (read through one-hot values)"
    expect_future_hidden(weights, what, student.device)
    expect_rows_sum_to_one(weights, what, student.device, causal=True)


@graded("causal_attention: changing future tokens does not change earlier outputs", weight=2)
def test_causality(student):
    module = build(student, params=qkv_params(D_IN, D_OUT, seed=5))
    check_causal(module, randn(B, N, D_IN, seed=6), "CausalAttention output", student.device,
                 "mask the scores above the diagonal (and keep the masked result)")


@graded("causal_attention: each sequence in a batch is processed independently", weight=2)
def test_batch_independence(student):
    module = build(student, params=qkv_params(D_IN, D_OUT, seed=8))
    check_batch_independent(module, randn(B, N, D_IN, seed=9), "CausalAttention output", student.device,
                            "the batch axis is being mixed (transpose(1, 2) for the keys, not .T)")


@graded("causal_attention: eval mode is deterministic; training drops and rescales attention weights", weight=2)
def test_dropout_in_module(student):
    p = 0.3
    module = build(student, dropout=p, qkv_bias=True)
    check_module_dropout(module, probe_params(D_IN, D_OUT, N), p, batch=64, n=N, d_in=D_IN, heads=1, seed=5,
                         rate_tolerance=0.08, what="CausalAttention")
    module.load(ones_value_params(D_IN, D_OUT))
    out = expect_tensor(module.forward(randn(4, N, D_IN, seed=6), train=True, seed=7), "CausalAttention output")
    if not dropout_hits_weights(out, heads=1):
        raise Failure("in training mode, dropout seems to act on the context vectors, not on the attention "
                      "weights: apply self.dropout to attn_weights, before attn_weights @ values",
                      cause="dropout_on_context")


@graded("causal_attention: works for one token and for a full context_length", weight=1)
def test_lengths(student):
    params = qkv_params(D_IN, D_OUT, seed=11)
    module = build(student, params=params)
    check_lengths(module, (1, CONTEXT), lambda x: linear_attention(x, params, causal=True),
                  lambda n: randn(2, n, D_IN, seed=12 + n), "CausalAttention outputs", student.device,
                  lambda x: suspects(lambda faults: linear_attention(x, params, True, faults), FAULTS))
