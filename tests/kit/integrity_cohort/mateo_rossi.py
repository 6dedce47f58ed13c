"""Mateo Rossi - attention assignment.

Written with the Annotated Transformer open in another tab (attention(),
p_attn, nbatches), but every function is my own.
"""
import math

import torch
from torch import nn


def attention(query, key, value, mask=None, dropout=None):
    """softmax(QK^T / sqrt(d_k)) V, with an optional boolean mask (True = hide)."""
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    p_attn = torch.softmax(scores, dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return p_attn @ value


def init_qkv_weights(d_in, d_out):
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    s = (q * k).sum(-1)
    mean = s.mean()
    before = ((s - mean) ** 2).mean().item()
    after = before / dim
    return before, after


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return attention(x @ self.W_query, x @ self.W_key, x @ self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return attention(self.W_query(x), self.W_key(x), self.W_value(x))


def causal_mask(context_length):
    rows = torch.arange(context_length).unsqueeze(1)
    cols = torch.arange(context_length).unsqueeze(0)
    return cols > rows


def mask_and_renormalize(attn_weights):
    hide = causal_mask(attn_weights.size(-1))
    p_attn = attn_weights.masked_fill(hide, 0.0)
    return p_attn / p_attn.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hide = causal_mask(scores.size(-1))
    return torch.softmax(scores.masked_fill(hide, -1e9) / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p=p, training=True)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.size(1)
        return attention(self.W_query(x), self.W_key(x), self.W_value(x),
                         mask=self.mask[:n, :n], dropout=self.dropout)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out has to be a multiple of num_heads")
        self.h = num_heads
        self.d_k = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        nbatches, n, _ = x.shape
        query = self.W_query(x).view(nbatches, n, self.h, self.d_k).transpose(1, 2)
        key = self.W_key(x).view(nbatches, n, self.h, self.d_k).transpose(1, 2)
        value = self.W_value(x).view(nbatches, n, self.h, self.d_k).transpose(1, 2)
        out = attention(query, key, value, mask=self.mask[:n, :n], dropout=self.dropout)
        out = out.transpose(1, 2).contiguous().view(nbatches, n, self.h * self.d_k)
        return self.out_proj(out)
