"""Attention exercise with a tiny base class that all the modules share."""
import math

import torch
from torch import nn


class _AttentionBase(nn.Module):
    """Common maths; subclasses only decide how to get q, k, v and the mask."""

    def _mask(self, n):
        return None

    def _qkv(self, x):
        raise NotImplementedError

    def _post(self, ctx, x):
        return ctx

    def _drop(self, w):
        return w

    def forward(self, x):
        q, k, v = self._qkv(x)
        s = q @ k.transpose(-2, -1)
        m = self._mask(q.shape[-2])
        if m is not None:
            s = s.masked_fill(m, float("-inf"))
        w = self._drop(torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1))
        return self._post(w @ v, x)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen)
    k = torch.randn(num_trials, dim, generator=gen)
    raw = (q * k).sum(dim=1)
    scaled = raw / math.sqrt(dim)
    return float(torch.var(raw)), float(torch.var(scaled))


class SelfAttention_v1(_AttentionBase):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def _qkv(self, x):
        return x @ self.W_query, x @ self.W_key, x @ self.W_value


class SelfAttention_v2(_AttentionBase):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def _qkv(self, x):
        return self.W_query(x), self.W_key(x), self.W_value(x)


# %% step: masking


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights):
    kept = attn_weights * torch.tril(torch.ones(attn_weights.shape[-2:], dtype=attn_weights.dtype))
    return kept / kept.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(scores.masked_fill(causal_mask(scores.shape[-1]), float("-inf")), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(SelfAttention_v2):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def _mask(self, n):
        return self.mask[:n, :n]

    def _drop(self, w):
        return self.dropout(w)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.out_proj = nn.Linear(d_out, d_out)

    def _qkv(self, x):
        b, n, _ = x.shape
        return tuple(t.view(b, n, self.num_heads, -1).transpose(1, 2) for t in super()._qkv(x))

    def _post(self, ctx, x):
        b, n, _ = x.shape
        return self.out_proj(ctx.transpose(1, 2).reshape(b, n, -1))
