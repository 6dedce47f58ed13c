"""The judge's own reference: attention written as plain functions of explicit weights.

Independent of `solutions/` (a kit test checks that both agree), computed in
float64, and able to reproduce the classic mistakes (`faults`, named by their
keys in grader.diagnosis.CAUSES, which words them) so that a test can tell a
student which one their output matches. Never shipped to students.
"""

import functools
import math

import torch

# The faults the functions below can reproduce.
FAULTS = ("softmax_dim", "softmax_batch", "no_scale", "scale_dk", "scale_after", "scale_d_in", "zero_fill",
          "no_mask", "mask_past", "scores_kq")
MHA_FAULTS = ("split_no_transpose", "merge_no_transpose", "no_out_proj", "scale_d_out")
# Faults that are one cause in the chapter's words (grader.diagnosis.CAUSES) under another name.
CAUSE_OF = {"softmax_batch": "softmax_dim"}


def generator(seed):
    return torch.Generator().manual_seed(seed)


def randn(*shape, seed, scale=1.0):
    """A fresh copy of a fixed draw: every submission of a class gets the same inputs, drawn once."""
    return _draw(shape, seed, scale).clone()


@functools.lru_cache(maxsize=4096)
def _draw(shape, seed, scale):
    return torch.randn(*shape, generator=generator(seed)) * scale


def linear_params(prefix, d_in, d_out, seed, bias=False):
    params = {f"{prefix}.weight": randn(d_out, d_in, seed=seed, scale=0.5)}
    if bias:
        params[f"{prefix}.bias"] = randn(d_out, seed=seed + 1, scale=0.5)
    return params


def qkv_params(d_in, d_out, seed, bias=False):
    params = {}
    for offset, role in enumerate(("W_query", "W_key", "W_value")):
        params.update(linear_params(role, d_in, d_out, seed + 10 * offset, bias))
    return params


def linear(x, params, prefix):
    out = x.double() @ params[f"{prefix}.weight"].double().T
    bias = params.get(f"{prefix}.bias")
    return out + bias.double() if bias is not None else out


def scores_of(queries, keys, faults=()):
    if "scores_kq" in faults:
        return keys.double() @ queries.double().transpose(-2, -1)
    return queries.double() @ keys.double().transpose(-2, -1)


def weights_of(scores, d_k, causal=True, faults=()):
    """Softmax(scores / sqrt(d_k)) with the causal mask, or with the named faults."""
    scores = scores.double()
    n = scores.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    if causal and "no_mask" not in faults:
        hidden = torch.tril(torch.ones(n, n, dtype=torch.bool), diagonal=-1) if "mask_past" in faults else future
        scores = scores.masked_fill(hidden, 0.0 if "zero_fill" in faults else -math.inf)
    if "no_scale" in faults or "scale_after" in faults:
        scale = 1.0
    elif "scale_dk" in faults:
        scale = float(d_k)
    else:
        scale = math.sqrt(d_k)
    axis = -2 if "softmax_dim" in faults else 0 if "softmax_batch" in faults else -1
    weights = torch.softmax(scores / scale, dim=axis)
    if "scale_after" in faults:
        weights = weights / math.sqrt(d_k)
    return weights


def self_attention(x, W_query, W_key, W_value, faults=()):
    """SelfAttention_v1 on one sequence with raw (d_in, d_out) matrices."""
    queries, keys, values = (x.double() @ W.double() for W in (W_query, W_key, W_value))
    d_k = x.shape[-1] if "scale_d_in" in faults else keys.shape[-1]
    weights = weights_of(scores_of(queries, keys, faults), d_k, causal=False, faults=faults)
    return weights @ values


def linear_attention(x, params, causal, faults=()):
    """Single-head attention with nn.Linear-style parameters ("W_query.weight", ...)."""
    queries, keys, values = (linear(x, params, role) for role in ("W_query", "W_key", "W_value"))
    d_k = x.shape[-1] if "scale_d_in" in faults else keys.shape[-1]
    weights = weights_of(scores_of(queries, keys, faults), d_k, causal=causal, faults=faults)
    return weights @ values


def split_heads(t, num_heads):
    b, n, d = t.shape
    return t.reshape(b, n, num_heads, d // num_heads).permute(0, 2, 1, 3)


def multihead(x, params, num_heads, faults=()):
    """MultiHeadAttention: project, split into heads, causal attention per head, merge, out_proj."""
    b, n, _ = x.shape
    queries, keys, values = (linear(x, params, role) for role in ("W_query", "W_key", "W_value"))
    d_out = queries.shape[-1]
    if "split_no_transpose" in faults:
        queries, keys, values = (t.reshape(b, num_heads, n, d_out // num_heads) for t in (queries, keys, values))
    else:
        queries, keys, values = (split_heads(t, num_heads) for t in (queries, keys, values))
    head_dim = d_out // num_heads
    d_k = d_out if "scale_d_out" in faults else x.shape[-1] if "scale_d_in" in faults else head_dim
    weights = weights_of(scores_of(queries, keys, faults), d_k, faults=faults)
    context = weights @ values  # (b, heads, n, head_dim)
    if "merge_no_transpose" in faults:
        context = context.reshape(b, n, d_out)
    else:
        context = context.permute(0, 2, 1, 3).reshape(b, n, d_out)
    if "no_out_proj" in faults:
        return context
    return linear(context, params, "out_proj")


def suspects(compute, faults):
    """(cause, output) for each named fault, computed with `compute(faults=(fault,))` only when a
    check asks for it: a check looks at them only when the student's output is wrong."""
    unknown = set(faults) - set(FAULTS) - set(MHA_FAULTS)
    if unknown:
        raise KeyError(f"the oracle cannot reproduce {sorted(unknown)}")
    return ((CAUSE_OF.get(fault, fault), compute(faults=(fault,))) for fault in faults)


def one_hot_tokens(batch, n, d_in):
    """Inputs whose token i is the unit vector e_i (d_in >= n), repeated over the batch."""
    x = torch.zeros(batch, n, d_in)
    x[:, torch.arange(n), torch.arange(n)] = 1.0
    return x


def identity_values(d_in, d_out, n, heads=1):
    """W_value.weight that maps token e_j to value e_j inside every head's block, so that
    the output of attention *is* its weight matrix (the value trick)."""
    head_dim = d_out // heads
    weight = torch.zeros(d_out, d_in)
    for head in range(heads):
        weight[head * head_dim + torch.arange(n), torch.arange(n)] = 1.0
    return weight
