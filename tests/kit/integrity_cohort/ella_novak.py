"""Ella Novak. I wanted to see the heads, so the multi-head class loops over
them and slices each projection by hand instead of reshaping."""

import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    weights = {}
    for name in ("query", "key", "value"):
        weights[name] = torch.rand(d_in, d_out)
    return weights["query"], weights["key"], weights["value"]


def project(x, W_query, W_key, W_value):
    return torch.tensordot(x, W_query, dims=1), torch.tensordot(x, W_key, dims=1), torch.tensordot(x, W_value, dims=1)


def attention_scores(queries, keys):
    return torch.matmul(queries, torch.swapaxes(keys, -1, -2))


def scaled_attention_weights(scores, d_k):
    return torch.nn.functional.softmax(torch.div(scores, math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    first = torch.randn(num_trials, dim, generator=g)
    second = torch.randn(num_trials, dim, generator=g)
    products = torch.sum(first * second, dim=1)
    mean = torch.mean(products)
    variance = torch.mean((products - mean) ** 2)
    return variance.item(), (variance / dim).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        weights = scaled_attention_weights(attention_scores(queries, keys), self.W_key.shape[1])
        return context_vectors(weights, values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        weights = scaled_attention_weights(attention_scores(self.W_query(x), self.W_key(x)),
                                           self.W_key.weight.shape[0])
        return context_vectors(weights, self.W_value(x))


def causal_mask(context_length):
    positions = torch.arange(context_length)
    future = positions.unsqueeze(0) - positions.unsqueeze(1)
    return future > 0


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    keep = torch.where(causal_mask(n), 0.0, 1.0).to(attn_weights.device)
    kept = attn_weights * keep
    return kept / torch.sum(kept, dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    filled = torch.where(causal_mask(n).to(scores.device), torch.tensor(float("-inf")), scores)
    return scaled_attention_weights(filled, d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    survive = torch.rand(attn_weights.shape, device=attn_weights.device) >= p
    return torch.where(survive, attn_weights / (1 - p), 0.0)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        scores = attention_scores(self.W_query(x), self.W_key(x))
        scores = torch.where(self.mask[:n, :n], torch.tensor(float("-inf")), scores)
        weights = self.dropout(scaled_attention_weights(scores, self.W_key.out_features))
        return context_vectors(weights, self.W_value(x))


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
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        per_head = []
        for h in range(self.num_heads):
            cols = slice(h * self.head_dim, (h + 1) * self.head_dim)
            scores = attention_scores(queries[..., cols], keys[..., cols])
            scores = torch.where(self.mask[:n, :n], torch.tensor(float("-inf")), scores)
            weights = self.dropout(scaled_attention_weights(scores, self.head_dim))
            per_head.append(context_vectors(weights, values[..., cols]))
        return self.out_proj(torch.cat(per_head, dim=-1))
