"""The judge's own reference: attention written as plain functions of explicit weights.

Independent of `solutions/` (a kit test checks that both agree), computed in
float64, and able to reproduce the classic mistakes (`faults`, named by their
keys in grader.diagnosis.CAUSES, which words them) so that a test can tell a
student which one their output matches. Never shipped to students.
"""

import math

import torch

from grader.check.signatures import draw

# The faults the functions below can reproduce (each a key of grader.check.causes.CAUSES, or one of
# CAUSE_OF's variants of a cause).
FAULTS = ("softmax_dim", "softmax_batch", "softmax_heads", "no_scale", "scale_dk", "scale_after", "scale_multiplied",
          "scale_d_in", "scale_num_tokens", "zero_fill", "no_mask", "mask_past", "mask_past_diagonal",
          "mask_hides_diagonal", "mask_off_by_one", "scores_kq", "no_projection")
MHA_FAULTS = ("split_no_transpose", "merge_no_transpose", "no_out_proj", "scale_d_out", "scale_num_heads",
              "out_proj_activation")
# Variants that are one cause in the chapter's words (grader.check.causes.CAUSES) under another name.
CAUSE_OF = {"softmax_batch": "softmax_dim", "softmax_heads": "softmax_dim", "mask_past_diagonal": "mask_past"}
HIDDEN_BY = {  # fault: (torch.triu or torch.tril, diagonal) of the positions it hides
    "mask_past": (torch.tril, -1), "mask_past_diagonal": (torch.tril, 0), "mask_hides_diagonal": (torch.triu, 0),
    "mask_off_by_one": (torch.triu, 2)}


def generator(seed):
    return torch.Generator().manual_seed(seed)


def randn(*shape, seed, scale=1.0):
    """A fresh copy of a fixed draw (the probes' `draw`, at scale 1 unless told): every submission of a class
    gets the same inputs, drawn once."""
    return draw(*shape, seed=seed, scale=scale)


def expect_no_overflow(student, function, causal, what):
    """`function(scores, d_k)` on scores about a thousand times the usual: torch.softmax keeps every weight finite
    (it subtracts each row's largest score first); exp(scores) / sum overflows to inf / inf = NaN (the chapter's
    naive softmax, which it warns against). Only finiteness is asked: how close is the other checks' business."""
    from grader.check.causes import observation
    from grader.check.testing import expect_tensor, fail, named_crashes

    # Causal: every score of a row alike (rows differ), so that no future score outweighs the visible ones: the
    # chapter's "softmax, then zero the future and renormalise" stays finite (a large future score would underflow
    # every visible weight to 0, and 0 / 0 is no naive softmax's fault), while exp(±1500) still overflows.
    scores = randn(2, 5, 1, seed=11, scale=3000.0).expand(2, 5, 5).clone() if causal else \
        randn(2, 5, 5, seed=11, scale=3000.0)
    with named_crashes():
        got = student.call(function, scores, 4)
    overflowed = isinstance(got, torch.Tensor) and tuple(got.shape) == (2, 5, 5) and got.is_floating_point() and \
        not bool(torch.isfinite(got.double()).all())
    if not overflowed:
        expect_tensor(got, f"{what} for large scores", shape=(2, 5, 5))
    else:
        fail(f"{what} for scores of about ±3000 hold NaN or inf, where softmax(scores / sqrt(d_k)) is finite"
             + (" (the future at 0)" if causal else ""), [observation("cause", "softmax_overflow")])


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
    ones = torch.ones(n, n, dtype=torch.bool)
    if causal and "no_mask" not in faults:
        triangle, diagonal = next((HIDDEN_BY[fault] for fault in faults if fault in HIDDEN_BY), (torch.triu, 1))
        scores = scores.masked_fill(triangle(ones, diagonal=diagonal), 0.0 if "zero_fill" in faults else -math.inf)
    if "no_scale" in faults or "scale_after" in faults:
        scale = 1.0
    elif "scale_dk" in faults:
        scale = float(d_k)
    elif "scale_multiplied" in faults:
        scale = 1 / math.sqrt(d_k)
    elif "scale_num_tokens" in faults:
        scale = math.sqrt(n)
    else:
        scale = math.sqrt(d_k)
    axis = -2 if "softmax_dim" in faults else 0 if "softmax_batch" in faults else 1 if "softmax_heads" in faults else -1
    if axis == 1 and scores.dim() < 4:
        axis = -2
    weights = torch.softmax(scores / scale, dim=axis)
    if "scale_after" in faults:
        weights = weights / math.sqrt(d_k)
    return weights


def self_attention(x, W_query, W_key, W_value, faults=()):
    """SelfAttention_v1 on one sequence with raw (d_in, d_out) matrices."""
    if "no_projection" in faults:
        queries = keys = values = x.double()
    else:
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
    d_k = (d_out if "scale_d_out" in faults else x.shape[-1] if "scale_d_in" in faults else
           num_heads if "scale_num_heads" in faults else head_dim)
    weights = weights_of(scores_of(queries, keys, faults), d_k, faults=faults)
    context = weights @ values  # (b, heads, n, head_dim)
    if "merge_no_transpose" in faults:
        context = context.reshape(b, n, d_out)
    else:
        context = context.permute(0, 2, 1, 3).reshape(b, n, d_out)
    if "no_out_proj" in faults:
        return context
    out = linear(context, params, "out_proj")
    return torch.relu(out) if "out_proj_activation" in faults else out


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
