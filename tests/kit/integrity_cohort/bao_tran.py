"""Chapter 3 homework -- Bao Tran.

Worked through the chapter listings; helper functions are mine.
"""

import math

import torch
from torch import nn


def _future_mask(size, device=None):
    # True above the diagonal = tokens that come later and must stay hidden
    upper = torch.ones(size, size, dtype=torch.bool, device=device)
    return upper.triu(1)


def _softmax_rows(t):
    return torch.softmax(t, dim=-1)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    # order matters because the seed is set by the caller
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    return tuple(x @ w for w in (W_query, W_key, W_value))


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    return _softmax_rows(scores / math.sqrt(d_k))


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator()
    rng.manual_seed(seed)
    qs = torch.randn((num_trials, dim), generator=rng)
    ks = torch.randn((num_trials, dim), generator=rng)
    raw = torch.einsum("td,td->t", qs, ks)
    scaled = raw / math.sqrt(dim)
    return float(raw.var()), float(scaled.var())


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        weights = scaled_attention_weights(attention_scores(q, k), k.shape[-1])
        return context_vectors(weights, v)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        weights = scaled_attention_weights(attention_scores(q, k), k.shape[-1])
        return context_vectors(weights, v)


# %% step: masking


def causal_mask(context_length):
    return _future_mask(context_length)


def mask_and_renormalize(attn_weights):
    hidden = _future_mask(attn_weights.shape[-1], attn_weights.device)
    kept = attn_weights.masked_fill(hidden, 0.0)
    return kept / kept.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hidden = _future_mask(scores.shape[-1], scores.device)
    blocked = scores.masked_fill(hidden, float("-inf"))
    # scale then normalise each row
    return _softmax_rows(blocked / d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if training and p > 0:
        survivors = torch.rand_like(attn_weights) >= p
        return torch.where(survivors, attn_weights / (1.0 - p), torch.zeros_like(attn_weights))
    return attn_weights


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _future_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = attention_scores(q, k).masked_fill(self.mask[:n, :n], float("-inf"))
        weights = self.dropout(_softmax_rows(scores / math.sqrt(k.shape[-1])))
        return context_vectors(weights, v)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        heads = []
        for _ in range(num_heads):
            heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.heads = nn.ModuleList(heads)

    def forward(self, x):
        outputs = [h(x) for h in self.heads]
        return torch.cat(outputs, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"cannot split {d_out} features into {num_heads} heads")
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _future_mask(context_length))

    def _heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, n, _ = x.shape
        q = self._heads(self.W_query(x))
        k = self._heads(self.W_key(x))
        v = self._heads(self.W_value(x))
        scores = attention_scores(q, k).masked_fill(self.mask[:n, :n], float("-inf"))
        weights = self.dropout(_softmax_rows(scores / math.sqrt(self.head_dim)))
        merged = context_vectors(weights, v).transpose(1, 2).reshape(b, n, -1)
        return self.out_proj(merged)
