"""Attention mechanisms -- functional flavour (torch.nn.functional wherever it fits)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    # F.linear(x, W) computes x @ W.T, so hand it the transposed (d_out, d_in) matrices
    return F.linear(x, W_query.T), F.linear(x, W_key.T), F.linear(x, W_value.T)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    dots = F.cosine_similarity(q, k, dim=-1) * q.norm(dim=-1) * k.norm(dim=-1)
    return dots.var(unbiased=False).item(), (dots / math.sqrt(dim)).var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        w = F.softmax(q @ k.T / math.sqrt(k.shape[-1]), dim=-1)
        return w @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q = F.linear(x, self.W_query.weight, self.W_query.bias)
        k = F.linear(x, self.W_key.weight, self.W_key.bias)
        v = F.linear(x, self.W_value.weight, self.W_value.bias)
        w = F.softmax(q @ k.T / math.sqrt(k.shape[-1]), dim=-1)
        return w @ v


def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(diagonal=1).to(dtype=torch.bool)


def mask_and_renormalize(attn_weights):
    kept = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]).to(attn_weights.device), 0.0)
    return F.normalize(kept, p=1, dim=-1)


def causal_attention_weights(scores, d_k):
    hidden = causal_mask(scores.shape[-1]).to(scores.device)
    return F.softmax(scores.masked_fill(hidden, -math.inf) / math.sqrt(d_k), dim=-1)


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
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(diagonal=1))

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.matmul(q, k.transpose(1, 2)).masked_fill(self.mask[:t, :t].bool(), -math.inf)
        w = self.dropout(F.softmax(s / math.sqrt(k.shape[-1]), dim=-1))
        return torch.matmul(w, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat(tuple(h(x) for h in self.heads), dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(diagonal=1))

    def forward(self, x):
        b, t, _ = x.shape
        # one fused projection: stack the three weight matrices, then split the result
        weight = torch.cat([self.W_query.weight, self.W_key.weight, self.W_value.weight], dim=0)
        bias = None
        if self.W_query.bias is not None:
            bias = torch.cat([self.W_query.bias, self.W_key.bias, self.W_value.bias])
        q, k, v = F.linear(x, weight, bias).split(self.d_out, dim=-1)
        q, k, v = (z.view(b, t, self.num_heads, self.head_dim).transpose(1, 2) for z in (q, k, v))
        s = torch.matmul(q, k.transpose(-2, -1)).masked_fill(self.mask[:t, :t].bool(), -math.inf)
        w = self.dropout(F.softmax(s / math.sqrt(self.head_dim), dim=-1))
        y = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, t, self.d_out)
        return F.linear(y, self.out_proj.weight, self.out_proj.bias)
