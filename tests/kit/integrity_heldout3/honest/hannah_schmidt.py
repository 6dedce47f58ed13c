"""Self-attention, causal attention and multi-head attention (chapter 3).

Submission of Hannah Schmidt.
"""

import math
from typing import Optional, Tuple

import torch
from torch import nn


# ---------------------------------------------------------------------------
# small helpers shared by the steps below
# ---------------------------------------------------------------------------

def _upper_triangle(n: int, device: Optional[torch.device] = None) -> torch.Tensor:
    """Bool matrix, True strictly above the main diagonal."""
    idx = torch.arange(n, device=device)
    return idx.unsqueeze(0) > idx.unsqueeze(1)   # column index > row index


def _softmax_scaled(scores: torch.Tensor, d_k: int) -> torch.Tensor:
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    """Three uniform [0, 1) matrices drawn in the order Q, K, V."""
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)


def project(x, W_query, W_key, W_value):
    """Multiply the inputs by each of the three weight matrices."""
    return tuple(x @ W for W in (W_query, W_key, W_value))


# %% step: scaling


def attention_scores(queries, keys):
    """Pairwise dot products, shape (..., n, n)."""
    return queries @ keys.mT


def scaled_attention_weights(scores, d_k):
    """Scale by 1/sqrt(d_k) then softmax along the rows."""
    return _softmax_scaled(scores, d_k)


def context_vectors(attn_weights, values):
    """Weighted average of the values."""
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0) -> Tuple[float, float]:
    """Empirical variance of q.k without and with the 1/sqrt(dim) factor."""
    g = torch.Generator().manual_seed(seed)
    qs = torch.randn(num_trials, dim, generator=g)
    ks = torch.randn(num_trials, dim, generator=g)
    d = (qs * ks).sum(-1)
    return float(d.var()), float((d / math.sqrt(dim)).var())


class SelfAttention_v1(nn.Module):
    """Version 1: weights are bare nn.Parameter matrices."""

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(_softmax_scaled(attention_scores(q, k), k.shape[-1]), v)

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))


class SelfAttention_v2(nn.Module):
    """Version 2: nn.Linear layers (these store the weight transposed)."""

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(_softmax_scaled(attention_scores(q, k), k.shape[-1]), v)

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)


# %% step: masking


def causal_mask(context_length):
    """True where token j lies in the future of token i."""
    return _upper_triangle(context_length)


def mask_and_renormalize(attn_weights):
    """Zero the upper triangle and rescale so that every row sums to 1 again."""
    hide = _upper_triangle(attn_weights.shape[-1], attn_weights.device)
    w = torch.where(hide, torch.zeros_like(attn_weights), attn_weights)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    """Mask with -inf before the softmax, so no renormalising is needed."""
    hide = _upper_triangle(scores.shape[-1], scores.device)
    return _softmax_scaled(scores.masked_fill(hide, -torch.inf), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout (what nn.Dropout does in train mode)."""
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    """One causal head; works on batches (b, n, d_in)."""

    def forward(self, x):
        n = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = attention_scores(q, k).masked_fill(self.mask[:n, :n], -torch.inf)
        weights = self.dropout(_softmax_scaled(scores, k.size(-1)))
        return weights @ v

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _upper_triangle(context_length))


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """Stack of independent heads, outputs concatenated on the feature axis."""

    def forward(self, x):
        return torch.cat(tuple(head(x) for head in self.heads), dim=-1)

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=qkv_bias) for _ in range(num_heads)]
        )


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """All heads computed at once from a single projection per role."""

    def forward(self, x):
        b, n, _ = x.shape

        def heads(t):
            # (b, n, d_out) -> (b, num_heads, n, head_dim)
            return t.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)

        q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        scores = attention_scores(q, k).masked_fill(self.mask[:n, :n], -torch.inf)
        weights = self.dropout(_softmax_scaled(scores, self.head_dim))
        out = (weights @ v).transpose(1, 2).flatten(2)    # back to (b, n, d_out)
        return self.out_proj(out)

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "num_heads must divide d_out"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _upper_triangle(context_length))
