"""Attention exercise."""
import math

import torch
from torch import nn


def _verify_width(t, expected, what):
    if t.shape[-1] != expected:
        raise ValueError(f"{what}: expected last dim {expected}, got {tuple(t.shape)}")


# %% step: projection


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    assert W_query.shape == W_key.shape == W_value.shape == (d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    _verify_width(x, W_query.shape[0], "project")
    assert W_query.shape == W_key.shape == W_value.shape
    q = x @ W_query
    k = x @ W_key
    v = x @ W_value
    return q, k, v


# %% step: scaling


def attention_scores(queries, keys):
    assert queries.shape[-1] == keys.shape[-1], "query/key size mismatch"
    out = queries @ keys.transpose(-2, -1)
    return out


def scaled_attention_weights(scores, d_k):
    w = torch.softmax(scores / math.sqrt(d_k), dim=-1)
    return w


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    assert dim >= 1 and num_trials >= 2
    g = torch.Generator().manual_seed(int(seed))
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    products = (q * k).sum(dim=-1)
    var_raw = float(products.var())
    var_scaled = float((products / math.sqrt(dim)).var())
    return var_raw, var_scaled


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        _verify_width(x, self.d_in, "SelfAttention_v1")
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        w = scaled_attention_weights(attention_scores(q, k), self.d_out)
        return context_vectors(w, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        assert x.dim() == 2, f"SelfAttention_v2 expects (n, d_in), got {tuple(x.shape)}"
        _verify_width(x, self.d_in, "SelfAttention_v2")
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = scaled_attention_weights(attention_scores(q, k), self.d_out)
        return context_vectors(w, v)


# %% step: masking


def causal_mask(context_length):
    m = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
    return m


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    w = attn_weights.masked_fill(causal_mask(n).to(attn_weights.device), 0.0)
    s = w.sum(dim=-1, keepdim=True)
    return w / s


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    masked = scores.masked_fill(causal_mask(n).to(scores.device), float("-inf"))
    return scaled_attention_weights(masked, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0.0:
        return attn_weights
    if p == 1.0:
        return torch.zeros_like(attn_weights)
    survivors = torch.rand_like(attn_weights) > p
    return attn_weights * survivors.to(attn_weights.dtype) / (1.0 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_in, self.d_out, self.context_length = d_in, d_out, context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, d = x.shape
        assert n <= self.context_length, "sequence longer than context_length"
        _verify_width(x, self.d_in, "CausalAttention")
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], float("-inf"))
        w = self.dropout(scaled_attention_weights(s, self.d_out))
        out = context_vectors(w, v)
        assert out.shape == (b, n, self.d_out)
        return out


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )
        self.d_total = d_out * num_heads

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        assert out.shape[-1] == self.d_total
        return out


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_in, self.d_out = d_in, d_out
        self.context_length = context_length
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        assert x.dim() == 3
        b, n, _ = x.shape
        head_shape = (b, n, self.num_heads, self.head_dim)
        q = self.W_query(x).view(head_shape).transpose(1, 2)
        k = self.W_key(x).view(head_shape).transpose(1, 2)
        v = self.W_value(x).view(head_shape).transpose(1, 2)
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], float("-inf"))
        w = self.dropout(scaled_attention_weights(s, self.head_dim))
        merged = context_vectors(w, v).transpose(1, 2).contiguous().view(b, n, self.d_out)
        out = self.out_proj(merged)
        assert out.shape == (b, n, self.d_out)
        return out
