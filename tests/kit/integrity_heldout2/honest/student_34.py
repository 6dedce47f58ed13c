import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    queries = torch.matmul(x, W_query)
    keys = torch.matmul(x, W_key)
    values = torch.matmul(x, W_value)
    return queries, keys, values


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    qs = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    ks = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    dots = torch.diagonal(qs @ ks.T)
    return dots.var(unbiased=False).item(), (dots / math.sqrt(dim)).var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        weights = scaled_attention_weights(attention_scores(queries, keys), keys.shape[-1])
        return context_vectors(weights, values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        weights = scaled_attention_weights(attention_scores(queries, keys), keys.shape[-1])
        return context_vectors(weights, values)


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length), 1).bool()


def mask_and_renormalize(attn_weights):
    keep = torch.tril(torch.ones(attn_weights.shape[-2:], device=attn_weights.device))
    w = attn_weights * keep
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    blocked = causal_mask(scores.shape[-1]).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(blocked, -torch.inf), d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    keep = torch.rand_like(attn_weights) >= p
    return attn_weights * keep / (1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), 1))

    def forward(self, x):
        num_tokens = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = attention_scores(queries, keys)
        scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens].bool(), -torch.inf)
        weights = self.dropout(scaled_attention_weights(scores, keys.shape[-1]))
        return context_vectors(weights, values)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)
        ])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


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
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), 1))

    def split_heads(self, t):
        batch, num_tokens, _ = t.shape
        return t.reshape(batch, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        batch, num_tokens, _ = x.shape
        queries = self.split_heads(self.W_query(x))
        keys = self.split_heads(self.W_key(x))
        values = self.split_heads(self.W_value(x))

        scores = attention_scores(queries, keys)
        scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens].bool(), -torch.inf)
        weights = self.dropout(scaled_attention_weights(scores, self.head_dim))

        context = context_vectors(weights, values)  # (batch, heads, tokens, head_dim)
        context = context.reshape(batch, num_tokens, self.d_out)
        return self.out_proj(context)
