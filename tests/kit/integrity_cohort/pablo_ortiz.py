"""Pablo Ortiz - chapter 3 homework (attention)."""

import math

import torch
from torch import nn


def _row_softmax(t):
    return torch.softmax(t, dim=-1)


def _hidden(n, device=None):
    # positions after the current token
    tri = torch.ones(n, n, dtype=torch.bool, device=device)
    return tri.triu(1)


# %% step: masking


def causal_mask(context_length):
    return _hidden(context_length)


def causal_attention_weights(scores, d_k):
    future = _hidden(scores.shape[-1], scores.device)
    filled = scores.masked_fill(future, float("-inf"))
    return _row_softmax(filled / d_k)


def mask_and_renormalize(attn_weights):
    future = _hidden(attn_weights.shape[-1], attn_weights.device)
    remaining = attn_weights.masked_fill(future, 0.0)
    return remaining / remaining.sum(-1, keepdim=True)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    first = torch.rand(d_in, d_out)
    second = torch.rand(d_in, d_out)
    third = torch.rand(d_in, d_out)
    return first, second, third


def project(x, W_query, W_key, W_value):
    return tuple(x @ m for m in (W_query, W_key, W_value))


# %% step: scaling


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    return _row_softmax(scores / math.sqrt(d_k))


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator()
    gen.manual_seed(seed)
    a = torch.randn((num_trials, dim), generator=gen)
    b = torch.randn((num_trials, dim), generator=gen)
    plain = torch.einsum("td,td->t", a, b)
    return float(plain.var()), float((plain / math.sqrt(dim)).var())


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        qs, ks, vs = project(x, self.W_query, self.W_key, self.W_value)
        w = scaled_attention_weights(attention_scores(qs, ks), ks.shape[-1])
        return context_vectors(w, vs)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        qs, ks, vs = self.W_query(x), self.W_key(x), self.W_value(x)
        w = scaled_attention_weights(attention_scores(qs, ks), ks.shape[-1])
        return context_vectors(w, vs)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not (training and p > 0):
        return attn_weights
    kept = torch.rand_like(attn_weights) >= p
    return torch.where(kept, attn_weights / (1.0 - p), torch.zeros_like(attn_weights))


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"{d_out} features do not split into {num_heads} heads")
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _hidden(context_length))

    def _split(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, n, _ = x.shape
        qs = self._split(self.W_query(x))
        ks = self._split(self.W_key(x))
        vs = self._split(self.W_value(x))
        s = attention_scores(qs, ks).masked_fill(self.mask[:n, :n], float("-inf"))
        w = self.dropout(_row_softmax(s / math.sqrt(self.head_dim)))
        joined = context_vectors(w, vs).transpose(1, 2).reshape(b, n, -1)
        return self.out_proj(joined)


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _hidden(context_length))

    def forward(self, x):
        n = x.shape[1]
        qs, ks, vs = self.W_query(x), self.W_key(x), self.W_value(x)
        s = attention_scores(qs, ks).masked_fill(self.mask[:n, :n], float("-inf"))
        w = self.dropout(_row_softmax(s / math.sqrt(ks.shape[-1])))
        return context_vectors(w, vs)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        made = []
        for _ in range(num_heads):
            made.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.heads = nn.ModuleList(made)

    def forward(self, x):
        return torch.cat([m(x) for m in self.heads], dim=-1)
