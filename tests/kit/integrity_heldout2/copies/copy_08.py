"""Homework 3 -- attention (my implementation)."""

import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    q_vec = torch.matmul(x, W_query)
    k_vec = torch.matmul(x, W_key)
    v_vec = torch.matmul(x, W_value)
    return q_vec, k_vec, v_vec


def attention_scores(queries, keys):
    raw = queries @ keys.transpose(-2, -1)
    return raw


def scaled_attention_weights(scores, d_k):
    d_k = float(d_k)
    attn_weights = torch.softmax(scores / d_k ** 0.5, dim=-1)
    return attn_weights


def context_vectors(attn_weights, values):
    result = attn_weights @ values
    return result


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries = x @ self.W_query
        keys = x @ self.W_key
        values = x @ self.W_value
        raw = queries @ keys.T  # raw similarities
        attn_weights = torch.softmax(raw / keys.shape[-1] ** 0.5, dim=-1)
        result = torch.matmul(attn_weights, values)
        return result


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        raw = queries @ keys.T  # raw similarities
        attn_weights = torch.softmax(raw / keys.shape[-1] ** 0.5, dim=-1)
        result = attn_weights @ values
        return result


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        bsz, ntok, _feat = x.shape
        values = self.W_value(x)
        keys = self.W_key(x)
        queries = self.W_query(x)

        raw = torch.matmul(queries, keys.transpose(1, 2))
        raw.masked_fill_(
            self.mask.bool()[:ntok, :ntok], -torch.inf
        )
        attn_weights = torch.softmax(raw / math.sqrt(keys.shape[-1]), dim = 1)
        attn_weights = self.dropout(attn_weights)

        result = attn_weights @ values
        return result


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
             for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert (d_out % num_heads == 0), "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        bsz, ntok, d_in = x.shape
        queries = self.W_query(x).view(bsz, ntok, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(bsz, ntok, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(bsz, ntok, self.num_heads, self.head_dim).transpose(1, 2)

        raw = queries @ keys.transpose(-2, -1)
        future = self.mask.bool()[:ntok, :ntok]
        raw = raw.masked_fill(future, -torch.inf)
        attn_weights = torch.softmax(raw / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        result = (attn_weights @ values).transpose(1, 2)
        result = result.contiguous().view(bsz, ntok, self.d_out)
        return self.out_proj(result)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator()
    gen.manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    dot_products = torch.einsum("ij,ij->i", q, k)
    scaled = dot_products / dim ** 0.5
    return dot_products.var(correction=0).item(), scaled.var(correction=0).item()


def causal_mask(context_length):
    tri = torch.tril(torch.ones(context_length, context_length))
    return tri == 0


def mask_and_renormalize(attn_weights):
    mask = causal_mask(attn_weights.shape[-1])
    zeroed = attn_weights.masked_fill(mask, 0.0)
    row_sums = zeroed.sum(dim=-1, keepdim=True)
    renormed = zeroed / row_sums
    return renormed


def causal_attention_weights(scores, d_k):
    mask = causal_mask(scores.shape[-1])
    masked = scores.masked_fill(mask, -torch.inf)
    attn_weights = torch.softmax(masked / d_k ** 0.5, dim=-1)
    return attn_weights


def attention_dropout(attn_weights, p, training=True):
    if training is False:
        return attn_weights
    if p == 1.0:
        return torch.zeros_like(attn_weights)
    kept = torch.rand_like(attn_weights) >= p
    return attn_weights * kept / (1.0 - p)
