"""Step 7 (multihead_attention): hidden checks."""

import torch
from .oracle import linear_attention, linear_params, multihead, qkv_params, randn, suspects
from .probes import (check_batch_independent, check_causal, check_lengths, check_module_dropout, dropout_hits_weights,
                    ones_value_params, probe_params, probe_weights, weights_from_output)

from grader.check.testing import Failure, expect_close, expect_future_hidden, expect_rows_sum_to_one, expect_tensor, graded

B, N, CONTEXT, D_IN, D_OUT, HEADS = 3, 5, 7, 6, 8, 2  # head_dim = 4
FAULTS = ("split_no_transpose", "merge_no_transpose", "no_out_proj", "scale_d_out", "scale_d_in", "softmax_dim",
          "softmax_batch", "no_scale", "scale_after", "zero_fill", "no_mask", "mask_past", "scores_kq")


def mha_params(seed, bias=False, d_in=D_IN, d_out=D_OUT):
    params = qkv_params(d_in, d_out, seed, bias=bias)
    params.update(linear_params("out_proj", d_out, d_out, seed + 100, bias=True))
    return params


def build(student, d_in=D_IN, d_out=D_OUT, heads=HEADS, dropout=0.0, qkv_bias=False, params=None):
    return student.build("MultiHeadAttention", d_in, d_out, CONTEXT, dropout, heads, qkv_bias=qkv_bias, seed=0,
                         weights=params)


def check_against_reference(student, x, params, qkv_bias, what, heads=HEADS, d_out=D_OUT):
    module = build(student, d_out=d_out, heads=heads, dropout=0.3, qkv_bias=qkv_bias, params=params)
    expect_close(module.forward(x, train=False), multihead(x, params, heads), what, device=student.device,
                 advice="check the split (view to (b, n, heads, head_dim), then transpose(1, 2)), the scaling by "
                        "sqrt(head_dim), the merge (transpose back, then view) and out_proj",
                 suspects=suspects(lambda faults: multihead(x, params, heads, faults), FAULTS))


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
    module = build(student, params=combined)
    expect_close(module.forward(x), wrapper, "MultiHeadAttention outputs with the heads' weights stacked",
                 device=student.device,
                 advice="head h must use rows h*head_dim:(h+1)*head_dim of each projection, exactly like the "
                        "h-th CausalAttention of the wrapper")


@graded("multihead_attention: each head's attention weights sum to one per row and hide the future", weight=2)
def test_weights_through_values(student):
    d_out, heads = 12, 2  # head_dim 6 >= N tokens, so every head's weights can be read off
    params = probe_params(D_IN, d_out, N, heads=heads, out_proj=True)
    module = build(student, d_out=d_out, heads=heads, qkv_bias=True)
    out, _ = probe_weights(module, params, B, N, D_IN, d_out, heads=heads)
    weights = weights_from_output(expect_tensor(out, "MultiHeadAttention output", shape=(B, N, d_out)), N, heads)
    what = "the attention weights of every head (read through one-hot values)"
    expect_future_hidden(weights, what, student.device)
    expect_rows_sum_to_one(weights, what, student.device, causal=True)


@graded("multihead_attention: changing future tokens does not change earlier outputs", weight=2)
def test_causality(student):
    module = build(student, params=mha_params(5))
    check_causal(module, randn(B, N, D_IN, seed=6), "MultiHeadAttention output", student.device,
                 "mask the scores above the diagonal in every head, and make sure the split into heads keeps "
                 "tokens apart")


@graded("multihead_attention: each sequence in a batch is processed independently", weight=1)
def test_batch_independence(student):
    module = build(student, params=mha_params(8))
    check_batch_independent(module, randn(B, N, D_IN, seed=9), "MultiHeadAttention output", student.device,
                            "the batch axis is mixed with the others (view/reshape with the batch size first)")


@graded("multihead_attention: eval mode is deterministic; training applies dropout to the weights", weight=1)
def test_dropout(student):
    p, d_out, heads = 0.3, 12, 2
    module = build(student, d_out=d_out, heads=heads, dropout=p, qkv_bias=True)
    check_module_dropout(module, probe_params(D_IN, d_out, N, heads=heads, out_proj=True), p, batch=64, n=N,
                         d_in=D_IN, heads=heads, seed=3, rate_tolerance=0.06, what="MultiHeadAttention")
    module.load(ones_value_params(D_IN, d_out, out_proj=True))
    out = expect_tensor(module.forward(randn(4, N, D_IN, seed=6), train=True, seed=7), "MultiHeadAttention output")
    if not dropout_hits_weights(out, heads):
        raise Failure("in training mode, dropout seems to act on the context vectors or the output, not on the "
                      "attention weights: apply self.dropout to attn_weights, before attn_weights @ values",
                      cause="dropout_on_context")


@graded("multihead_attention: qkv_bias and the out_proj bias are used", weight=1)
def test_biases(student):
    x = randn(B, N, D_IN, seed=11)
    check_against_reference(student, x, mha_params(12, bias=True), True, "MultiHeadAttention outputs with biases")


@graded("multihead_attention: works for one token and for a full context_length", weight=1)
def test_lengths(student):
    params = mha_params(13)
    module = build(student, params=params)
    check_lengths(module, (1, CONTEXT), lambda x: multihead(x, params, HEADS),
                  lambda n: randn(2, n, D_IN, seed=14 + n), "MultiHeadAttention outputs", student.device,
                  lambda x: suspects(lambda faults: multihead(x, params, HEADS, faults), FAULTS))
