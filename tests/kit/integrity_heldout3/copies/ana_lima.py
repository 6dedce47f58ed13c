"""Attention mechanisms, step by step: your working copy.

Fill in every function or method that raises NotImplementedError. Keep the
names and signatures exactly: the autograder calls them by name.
Check one step with `python check.py projection` (see README.md).
This file was generated from the course's solutions; your edits are yours.
"""

import math

import torch
from torch import nn


def _additive_mask(n):
    # lower triangle = 0, upper triangle = -inf, so it can be added to the scores
    return torch.full((n, n), float("-inf")).triu(1)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    # stack the three matrices and project everything at once
    W_all = torch.stack((W_query, W_key, W_value))
    proj = torch.einsum("...nd,kde->k...ne", x, W_all)
    return proj[0], proj[1], proj[2]


# %% step: scaling


def attention_scores(queries, keys):
    return torch.einsum("...qd,...kd->...qk", queries, keys)


def scaled_attention_weights(scores, d_k):
    return (scores * d_k ** -0.5).softmax(dim=-1)


def context_vectors(attn_weights, values):
    return torch.einsum("...qk,...kd->...qd", attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen)
    k = torch.randn(num_trials, dim, generator=gen)
    dots = torch.einsum("td,td->t", q, k)
    return dots.var().item(), dots.div(dim ** 0.5).var().item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.scale = d_out ** -0.5

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        sc = torch.einsum("qd,kd->qk", q, k) * self.scale
        return torch.einsum("qk,kd->qd", sc.softmax(dim=-1), v)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.scale = d_out ** -0.5

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        sc = torch.einsum("qd,kd->qk", q, k) * self.scale
        return torch.einsum("qk,kd->qd", sc.softmax(dim=-1), v)


# %% step: masking


def causal_mask(context_length):
    return torch.isinf(_additive_mask(context_length))


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    w = attn_weights * (~causal_mask(n)).to(attn_weights)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    sc = scores + _additive_mask(n).to(scores)
    return (sc * d_k ** -0.5).softmax(dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    # keep each entry with probability 1-p and scale the kept ones up
    if not training:
        return attn_weights
    keep = torch.bernoulli(torch.full_like(attn_weights, 1.0 - p))
    return attn_weights * keep / (1.0 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.scale = d_out ** -0.5
        self.register_buffer("mask", _additive_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        sc = torch.einsum("bqd,bkd->bqk", q, k) * self.scale
        sc = sc + self.mask[:n, :n]
        w = self.dropout(sc.softmax(dim=-1))
        return torch.einsum("bqk,bkd->bqd", w, v)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat(tuple(map(lambda head: head(x), self.heads)), dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.scale = self.head_dim ** -0.5
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _additive_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        # split into heads and move the head axis in front of the tokens
        q = self.W_query(x).view(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.W_key(x).view(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.W_value(x).view(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        sc = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.scale
        sc = sc + self.mask[:n, :n]
        w = self.dropout(sc.softmax(dim=-1))
        out = torch.einsum("bhqk,bhkd->bhqd", w, v).permute(0, 2, 1, 3).flatten(-2)
        return self.out_proj(out)
