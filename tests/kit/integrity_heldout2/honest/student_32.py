"""Exercise: attention. (Dropout = regularisation, so I put it on what each attention block gives back.)"""
import math

import torch
from torch import nn
import torch.nn.functional as F


def init_qkv_weights(d_in, d_out):
    query_w = torch.rand(d_in, d_out)
    key_w = torch.rand(d_in, d_out)
    value_w = torch.rand(d_in, d_out)
    return query_w, key_w, value_w


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / (d_k ** 0.5), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=rng, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=rng, dtype=torch.float64)
    dot = (q * k).sum(dim=-1)
    return dot.var(unbiased=False).item(), (dot / dim ** 0.5).var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.size(-1)), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.size(-1)), v)


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1)


def mask_and_renormalize(attn_weights):
    w = attn_weights * torch.tril(torch.ones_like(attn_weights))
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    future = causal_mask(scores.size(-1)).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(future, float("-inf")), d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    survive = torch.rand_like(attn_weights) >= p
    return survive * attn_weights / (1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = attention_scores(q, k).masked_fill(self.mask[:T, :T], float("-inf"))
        weights = scaled_attention_weights(scores, k.size(-1))
        return self.dropout(context_vectors(weights, v))


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        B, T, _ = x.shape
        q = self.W_query(x).view(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.W_key(x).view(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.W_value(x).view(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        scores = attention_scores(q, k).masked_fill(self.mask[:T, :T], float("-inf"))
        weights = scaled_attention_weights(scores, self.head_dim)
        ctx = context_vectors(weights, v).permute(0, 2, 1, 3).contiguous().view(B, T, self.d_out)
        return self.out_proj(self.dropout(ctx))
