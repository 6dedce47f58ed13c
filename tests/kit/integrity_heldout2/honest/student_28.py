"""Attention, written as small pure functions; the modules only hold the weights."""
import math
from functools import partial

import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    draw = partial(torch.rand, d_in, d_out)
    return draw(), draw(), draw()


def project(x, W_query, W_key, W_value):
    return tuple(map(lambda W: x @ W, (W_query, W_key, W_value)))


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores * d_k ** -0.5, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = [torch.randn(num_trials, dim, generator=g, dtype=torch.float64) for _ in "qk"]
    var = lambda t: t.var(unbiased=False).item()  # noqa: E731
    dots = (q * k).sum(-1)
    return var(dots), var(dots * dim ** -0.5)


def _attend(q, k, v, hidden=None, drop=lambda w: w):
    s = attention_scores(q, k)
    if hidden is not None:
        s = s.masked_fill(hidden, -math.inf)
    return context_vectors(drop(scaled_attention_weights(s, k.shape[-1])), v)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Parameter(torch.rand(d_in, d_out)) for _ in range(3))

    def forward(self, x):
        return _attend(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        linear = partial(nn.Linear, d_in, d_out, bias=qkv_bias)
        self.W_query, self.W_key, self.W_value = linear(), linear(), linear()

    def forward(self, x):
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x))


def causal_mask(context_length):
    return torch.triu(torch.full((context_length, context_length), True), diagonal=1)


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]).to(attn_weights.device), 0)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hidden = causal_mask(scores.shape[-1]).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(hidden, -math.inf), d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    keep = torch.rand_like(attn_weights) >= p
    return attn_weights * keep / (1 - p) if p < 1 else torch.zeros_like(attn_weights)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        linear = partial(nn.Linear, d_in, d_out, bias=qkv_bias)
        self.W_query, self.W_key, self.W_value = linear(), linear(), linear()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[-2]
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x), self.mask[:n, :n], self.dropout)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        make = partial(CausalAttention, d_in, d_out, context_length, dropout, qkv_bias)
        self.heads = nn.ModuleList(make() for _ in range(num_heads))

    def forward(self, x):
        return torch.cat(list(map(lambda head: head(x), self.heads)), dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        linear = partial(nn.Linear, d_in, d_out, bias=qkv_bias)
        self.W_query, self.W_key, self.W_value = linear(), linear(), linear()
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)  # noqa: E731
        q, k, v = map(split, (self.W_query(x), self.W_key(x), self.W_value(x)))
        out = _attend(q, k, v, self.mask[:n, :n], self.dropout)
        return self.out_proj(out.transpose(1, 2).reshape(b, n, -1))
