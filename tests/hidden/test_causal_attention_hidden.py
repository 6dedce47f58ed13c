"""Step 5 (causal_attention): hidden checks."""

import torch
from oracle import linear_attention, qkv_params, randn, suspects
from probes import (check_batch_independent, check_causal, dropout_hits_weights, ones_value_params, probe_params,
                    probe_weights, weights_from_output)

from grader.testing import expect_close, expect_future_hidden, expect_rows_sum_to_one, expect_tensor, graded

B, N, CONTEXT, D_IN, D_OUT = 3, 5, 7, 8, 6
FAULTS = ("softmax_dim", "no_scale", "scale_dk", "scale_after", "zero_fill", "no_mask", "mask_past", "scores_kq")


def build(student, dropout=0.0, qkv_bias=False, params=None, context=CONTEXT):
    return student.build("CausalAttention", D_IN, D_OUT, context, dropout, qkv_bias=qkv_bias, seed=0, weights=params)


def check_against_reference(student, x, params, bias, what):
    module = build(student, dropout=0.3, qkv_bias=bias, params=params)
    expected = linear_attention(x, params, causal=True)
    expect_close(module.forward(x, train=False), expected, what, device=student.device,
                 advice="in eval mode the output is softmax(masked scores / sqrt(d_k)) @ values, no dropout",
                 suspects=suspects(lambda faults: linear_attention(x, params, True, faults), FAULTS))


@graded("causal_attention: with injected weights the output matches the reference (eval mode)", points=4)
def test_injected(student):
    x = randn(B, N, D_IN, seed=1)
    check_against_reference(student, x, qkv_params(D_IN, D_OUT, seed=2), False, "CausalAttention outputs")


@graded("causal_attention: qkv_bias=True adds biases to the projections, and they are used", points=2)
def test_bias(student):
    x = randn(B, N, D_IN, seed=3)
    check_against_reference(student, x, qkv_params(D_IN, D_OUT, seed=4, bias=True), True,
                            "CausalAttention outputs with qkv_bias=True")


@graded("causal_attention: each row of the attention weights sums to one and hides the future", points=2)
def test_weights_through_values(student):
    params = probe_params(D_IN, D_OUT, N)
    module = build(student, qkv_bias=True)
    out, _ = probe_weights(module, params, B, N, D_IN, D_OUT)
    weights = weights_from_output(expect_tensor(out, "CausalAttention output", shape=(B, N, D_OUT)), N, 1)
    what = "the attention weights (read through one-hot values)"
    expect_future_hidden(weights, what, student.device)
    expect_rows_sum_to_one(weights, what, student.device)


@graded("causal_attention: changing future tokens does not change earlier outputs", points=2)
def test_causality(student):
    module = build(student, params=qkv_params(D_IN, D_OUT, seed=5))
    check_causal(module, randn(B, N, D_IN, seed=6), "CausalAttention output", student.device,
                 "mask the scores above the diagonal (and keep the masked result)")


@graded("causal_attention: each sequence in a batch is processed independently", points=2)
def test_batch_independence(student):
    module = build(student, params=qkv_params(D_IN, D_OUT, seed=8))
    check_batch_independent(module, randn(B, N, D_IN, seed=9), "CausalAttention output", student.device,
                            "the batch axis is being mixed (transpose(1, 2) for the keys, not .T)")


@graded("causal_attention: eval mode is deterministic; training drops and rescales attention weights", points=2)
def test_dropout_in_module(student):
    p, batch = 0.3, 64
    params = probe_params(D_IN, D_OUT, N)
    module = build(student, dropout=p, qkv_bias=True)
    first, _ = probe_weights(module, params, batch, N, D_IN, D_OUT)
    again, _ = probe_weights(module, params, batch, N, D_IN, D_OUT)
    first = expect_tensor(first, "CausalAttention output in eval mode")
    assert torch.equal(first, expect_tensor(again, "CausalAttention output in eval mode")), (
        "two forward passes in eval mode differ: dropout must be inactive in eval mode (use self.dropout, "
        "an nn.Dropout, which follows module.train()/eval())")
    trained, _ = probe_weights(module, params, batch, N, D_IN, D_OUT, train=True, seed=5)
    trained = weights_from_output(expect_tensor(trained, "CausalAttention output in training mode"), N, 1)
    eval_weights = weights_from_output(first, N, 1)
    visible = torch.tril(torch.ones(N, N, dtype=torch.bool)).expand_as(trained)
    zero = (trained.abs() < 1e-7) & visible
    rate = zero.sum().item() / visible.sum().item()
    assert abs(rate - p) < 0.08, (f"in training mode with dropout={p}, {rate:.0%} of the visible attention "
                                  "weights were dropped; apply self.dropout to the attention weights")
    scaled = eval_weights / (1 - p)
    survivors = visible & ~zero
    assert torch.allclose(trained[survivors], scaled[survivors], rtol=1e-3, atol=1e-5), (
        "in training mode the surviving attention weights should be the eval-mode weights times 1/(1-p): "
        "apply dropout to the attention weights after the softmax, before multiplying by the values")
    module.load(ones_value_params(D_IN, D_OUT))
    out = expect_tensor(module.forward(randn(4, N, D_IN, seed=6), train=True, seed=7), "CausalAttention output")
    assert dropout_hits_weights(out, heads=1), (
        "in training mode, dropout seems to act on the context vectors, not on the attention weights: "
        "apply self.dropout to attn_weights, before attn_weights @ values")


@graded("causal_attention: works for one token and for a full context_length", points=1)
def test_lengths(student):
    params = qkv_params(D_IN, D_OUT, seed=11)
    module = build(student, params=params)
    for n in (1, CONTEXT):
        x = randn(2, n, D_IN, seed=12 + n)
        expect_close(module.forward(x), linear_attention(x, params, causal=True),
                     f"CausalAttention outputs for {n} token(s) (context_length={CONTEXT})", device=student.device,
                     advice="slice the mask to the number of tokens: mask[:num_tokens, :num_tokens]",
                     suspects=suspects(lambda faults: linear_attention(x, params, True, faults), FAULTS))
