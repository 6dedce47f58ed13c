"""Attention mechanisms, step by step: your working copy.

Malik Johnson -- everything funnels through one helper, _sdpa, so the
masking/scaling logic lives in exactly one place.
"""

import math

import torch
from torch import nn


def _sdpa(q, k, v, hidden=None, drop=None):
    """softmax(q k^T / sqrt(feat)) v, with optional boolean `hidden` and dropout."""
    feat = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(feat)
    if hidden is not None:
        scores = scores.masked_fill(hidden, float("-inf"))   # the -inf trick (lecture 5)
    weights = torch.softmax(scores, dim=-1)
    if drop is not None:
        weights = drop(weights)
    return weights @ v


# %% step: projection


def init_qkv_weights(d_in, d_out):
    mats = {name: torch.rand(d_in, d_out) for name in ("query", "key", "value")}
    return mats["query"], mats["key"], mats["value"]


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
    dots = (q * k).sum(-1)
    var_before, _ = torch.var_mean(dots)
    var_after, _ = torch.var_mean(dots / math.sqrt(dim))
    return var_before.item(), var_after.item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return _sdpa(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return _sdpa(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: masking


def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(1) > 0


def mask_and_renormalize(attn_weights):
    tok = attn_weights.shape[-1]
    kept = attn_weights * attn_weights.new_ones(tok, tok).tril()
    return kept / kept.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    tok = scores.shape[-1]
    hidden = causal_mask(tok).to(scores.device)
    return torch.softmax(scores.masked_fill(hidden, float("-inf")) / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        tok = x.shape[1]
        if tok > self.mask.shape[0]:
            raise ValueError(f"got {tok} tokens but context_length is {self.mask.shape[0]}")
        return _sdpa(self.W_query(x), self.W_key(x), self.W_value(x),
                     hidden=self.mask[:tok, :tok], drop=self.dropout)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def _split_heads(self, t):
        b, tok, _ = t.shape
        return t.view(b, tok, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, tok, _ = x.shape
        if tok > self.mask.shape[0]:
            raise ValueError(f"got {tok} tokens but context_length is {self.mask.shape[0]}")
        q = self._split_heads(self.W_query(x))
        k = self._split_heads(self.W_key(x))
        v = self._split_heads(self.W_value(x))
        ctx = _sdpa(q, k, v, hidden=self.mask[:tok, :tok], drop=self.dropout)
        return self.out_proj(ctx.transpose(1, 2).reshape(b, tok, -1))
