"""Chapter 3: attention.  George White."""

import math

import torch
from torch import nn


# %% step: projection


def project(x, W_query, W_key, W_value):
    """Returns (Q, K, V)."""
    return tuple(x @ W for W in (W_query, W_key, W_value))


def init_qkv_weights(d_in, d_out):
    """Three torch.rand matrices: query, key, value."""
    return tuple([torch.rand(d_in, d_out) for _ in range(3)])


# %% step: scaling


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Variance of q.k with and without dividing by sqrt(dim)."""
    gen = torch.Generator().manual_seed(seed)
    qs = torch.randn(num_trials, dim, generator=gen)
    ks = torch.randn(num_trials, dim, generator=gen)
    prods = (qs * ks).sum(dim=1)
    scaled = prods / math.sqrt(dim)
    before = torch.sum((prods - prods.mean()) ** 2) / (prods.numel() - 1)
    after = torch.sum((scaled - scaled.mean()) ** 2) / (scaled.numel() - 1)
    return before.item(), after.item()


def attention_scores(queries, keys):
    """Entry [r, c] is query r dotted with key c."""
    return torch.stack(
        [(keys * queries[..., r, :].unsqueeze(-2)).sum(dim=-1) for r in range(queries.shape[-2])],
        dim=-2,
    )


def context_vectors(attn_weights, values):
    """Weighted sum of value rows."""
    start = torch.zeros(*attn_weights.shape[:-1], values.shape[-1],
                        dtype=values.dtype, device=values.device)
    return start + sum(attn_weights[..., :, c:c + 1] * values[..., c:c + 1, :]
                       for c in range(values.shape[-2]))


def scaled_attention_weights(scores, d_k):
    """softmax(scores / sqrt(d_k))"""
    return _stable_softmax(scores / math.sqrt(d_k))


class SelfAttention_v2(nn.Module):
    """Linear-layer version."""

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(queries, keys), keys.shape[-1]), values)

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)


class SelfAttention_v1(nn.Module):
    """Parameter version."""

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(queries, keys), keys.shape[-1]), values)

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))


# %% step: masking


def causal_attention_weights(scores, d_k):
    """Future set to -inf before the softmax."""
    hidden = causal_mask(scores.shape[-1]).to(scores.device)
    return _stable_softmax(scores.masked_fill(hidden, -math.inf) / math.sqrt(d_k))


def mask_and_renormalize(attn_weights):
    """Future set to 0 after the softmax, rows rescaled."""
    hidden = causal_mask(attn_weights.shape[-1]).to(attn_weights.device)
    kept = attn_weights.masked_fill(hidden, 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


def causal_mask(context_length):
    """True strictly above the diagonal."""
    idx = torch.arange(context_length)
    return idx.view(1, -1) > idx.view(-1, 1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout."""
    if training:
        u = torch.empty_like(attn_weights).uniform_()
        return torch.where(u >= p, attn_weights / (1 - p), torch.zeros_like(attn_weights))
    return attn_weights


# %% step: causal_attention


class CausalAttention(nn.Module):
    """Single causal head."""

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        return self._attn(queries, keys) @ values

    def _attn(self, queries, keys):
        t = queries.shape[-2]
        sc = queries @ keys.transpose(-2, -1)
        sc = sc.masked_fill(self.mask[:t, :t], -math.inf)
        return self.dropout(_stable_softmax(sc / math.sqrt(keys.shape[-1])))

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """num_heads CausalAttention modules side by side."""

    def forward(self, x):
        return torch.cat([module(x) for module in self.heads], dim=-1)

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Heads computed from column blocks of one projection per role."""

    def forward(self, x):
        per_head = [self._head(x, i) for i in range(self.num_heads)]
        return self.out_proj(torch.cat(per_head, dim=-1))

    def _head(self, x, i):
        t = x.shape[1]
        start, stop = i * self.head_dim, (i + 1) * self.head_dim
        queries = self._part(self.W_query, x, start, stop)
        keys = self._part(self.W_key, x, start, stop)
        values = self._part(self.W_value, x, start, stop)
        sc = (queries @ keys.transpose(-2, -1)).masked_fill(self.mask[:t, :t], -math.inf)
        return self.dropout(_stable_softmax(sc / math.sqrt(self.head_dim))) @ values

    @staticmethod
    def _part(lin, x, start, stop):
        b = lin.bias[start:stop] if lin.bias is not None else None
        return nn.functional.linear(x, lin.weight[start:stop], b)

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
        self.register_buffer("mask", causal_mask(context_length))


def _stable_softmax(t):
    shifted = t - t.max(dim=-1, keepdim=True).values
    ex = torch.exp(shifted)
    return ex / ex.sum(dim=-1, keepdim=True)
