"""Causal self-attention, GPT style."""
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


def init_qkv_weights(d_in, d_out):
    return tuple(torch.rand(d_in, d_out) for _i in range(3))


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    wei = scores * d_k ** -0.5
    return F.softmax(wei, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=rng, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=rng, dtype=torch.float64)
    wei = (q * k).sum(-1)
    return wei.var(unbiased=False).item(), (wei * dim ** -0.5).var(unbiased=False).item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        wei = (q @ k.transpose(-2, -1)) * k.size(-1) ** -0.5
        wei = F.softmax(wei, dim=-1)
        return wei @ v


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        wei = (q @ k.transpose(-2, -1)) * k.size(-1) ** -0.5
        wei = F.softmax(wei, dim=-1)
        return wei @ v


def causal_mask(context_length):
    nt = context_length
    return torch.tril(torch.ones(nt, nt)) == 0


def mask_and_renormalize(attn_weights):
    nt = attn_weights.size(-1)
    wei = attn_weights.masked_fill(causal_mask(nt).to(attn_weights.device), 0.0)
    return wei / wei.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    nt = scores.size(-1)
    wei = scores.masked_fill(causal_mask(nt).to(scores.device), float('-inf'))
    return F.softmax(wei * d_k ** -0.5, dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0.0:
        return attn_weights
    if p == 1.0:
        return torch.zeros_like(attn_weights)
    keep = torch.rand_like(attn_weights) >= p
    return attn_weights * keep * (1.0 / (1.0 - p))


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        nb, nt, nc = x.size()
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        wei = (q @ k.transpose(-2, -1)) * k.size(-1) ** -0.5
        wei = wei.masked_fill(self.mask[:nt, :nt] == 1, float('-inf'))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        out = wei @ v
        return out


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.width = d_out
        self.heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        nb, nt, _ = x.size()
        nc = self.width
        q = self.W_query(x).view(nb, nt, self.heads, nc // self.heads).transpose(1, 2)
        k = self.W_key(x).view(nb, nt, self.heads, nc // self.heads).transpose(1, 2)
        v = self.W_value(x).view(nb, nt, self.heads, nc // self.heads).transpose(1, 2)

        wei = (q @ k.transpose(-2, -1)) * k.size(-1) ** -0.5
        wei = wei.masked_fill(self.mask[:nt, :nt] == 1, float('-inf'))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        out = wei @ v
        out = out.transpose(1, 2).contiguous().view(nb, nt, nc)

        out = self.out_proj(out)
        return out
