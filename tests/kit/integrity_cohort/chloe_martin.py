"""Chloe Martin -- self-attention, spelled out.

Following Sebastian Raschka's blog post "Understanding and Coding the
Self-Attention Mechanism of Large Language Models From Scratch": omega for the
unnormalised scores, explicit loops first, then the vectorised version.
"""

import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    query = x @ W_query
    key = x @ W_key
    value = x @ W_value
    return query, key, value


def attention_scores(queries, keys):
    # omega[..., i, j] = q_i . k_j, computed one key at a time
    n = keys.shape[-2]
    columns = []
    for j in range(n):
        k_j = keys[..., j, :].unsqueeze(-2)            # (..., 1, d)
        columns.append((queries * k_j).sum(dim=-1))   # (..., n)
    omega = torch.stack(columns, dim=-1)
    return omega


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / d_k**0.5, dim=-1)


def context_vectors(attn_weights, values):
    # z_i = sum_j alpha_ij v_j
    return (attn_weights.unsqueeze(-1) * values.unsqueeze(-3)).sum(dim=-2)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    omegas = torch.empty(num_trials)
    for t in range(num_trials):
        q = torch.randn(dim, generator=g)
        k = torch.randn(dim, generator=g)
        omegas[t] = q.dot(k)
    return omegas.var().item(), (omegas / dim**0.5).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_out_kq = d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T  # unnormalized attention weights
        attn_weights = torch.softmax(attn_scores / self.d_out_kq**0.5, dim=-1)
        return attn_weights @ values


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.d_out_kq = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / self.d_out_kq**0.5, dim=-1)
        return attn_weights @ values


def causal_mask(context_length):
    mask = torch.zeros(context_length, context_length, dtype=torch.bool)
    for i in range(context_length):
        for j in range(context_length):
            if j > i:
                mask[i, j] = True
    return mask


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    visible = torch.logical_not(causal_mask(n)).float()
    masked_simple = attn_weights * visible
    row_sums = masked_simple.sum(dim=-1, keepdim=True)
    return masked_simple / row_sums


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    masked = scores.masked_fill(causal_mask(n), -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    dropout = torch.nn.Dropout(p)
    return dropout(attn_weights)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out_kq = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask[:n, :n], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / self.d_out_kq**0.5, dim=-1))
        return attn_weights @ values


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.num_heads = num_heads
        self.d_out_kq = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        keys = self.W_key(x).view(b, n, self.num_heads, self.d_out_kq).transpose(1, 2)
        queries = self.W_query(x).view(b, n, self.num_heads, self.d_out_kq).transpose(1, 2)
        values = self.W_value(x).view(b, n, self.num_heads, self.d_out_kq).transpose(1, 2)
        attn_scores = (queries @ keys.transpose(2, 3)).masked_fill(self.mask[:n, :n], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / self.d_out_kq**0.5, dim=-1))
        context = (attn_weights @ values).transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(context)
