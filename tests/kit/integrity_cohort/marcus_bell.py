"""Marcus Bell -- attention assignment, chapter 3."""

import math

import torch
import torch.nn as nn


def causal_mask(context_length):
    tri = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    return tri.to(torch.bool)


def attention_scores(queries, keys):
    return queries.matmul(keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / d_k ** 0.5, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def init_qkv_weights(d_in, d_out):
    out = []
    for which in ["q", "k", "v"]:
        out.append(torch.rand(d_in, d_out))
    return tuple(out)


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def mask_and_renormalize(attn_weights):
    ahead = causal_mask(attn_weights.size(-1)).to(attn_weights.device)
    probs = attn_weights.masked_fill(ahead, 0.0)
    probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def causal_attention_weights(scores, d_k):
    ahead = causal_mask(scores.size(-1)).to(scores.device)
    logits = scores.masked_fill(ahead, float("-inf"))
    return scaled_attention_weights(logits, d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training or p <= 0:
        return attn_weights
    keep = (torch.rand_like(attn_weights) > p).to(attn_weights.dtype)
    return attn_weights * keep * (1.0 / (1.0 - p))


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    qs = torch.randn(num_trials, dim, generator=gen)
    ks = torch.randn(num_trials, dim, generator=gen)
    logits = torch.diagonal(qs @ ks.T)
    return logits.var().item(), (logits / dim ** 0.5).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        qs, ks, vs = project(x, self.W_query, self.W_key, self.W_value)
        logits = attention_scores(qs, ks)
        probs = scaled_attention_weights(logits, qs.size(-1))
        return context_vectors(probs, vs)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        qs, ks, vs = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = attention_scores(qs, ks)
        probs = scaled_attention_weights(logits, qs.size(-1))
        return context_vectors(probs, vs)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([single(x) for single in self.heads], dim=-1)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        length = x.size(1)
        qs, ks, vs = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = attention_scores(qs, ks).masked_fill(self.mask[:length, :length], float("-inf"))
        probs = scaled_attention_weights(logits, ks.size(-1))
        ctx = context_vectors(probs, vs)
        # dropout as regularisation
        return self.dropout(ctx)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "num_heads must divide d_out"
        self.heads_n = num_heads
        self.size_per_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        bs, length, width = x.size()
        split = lambda t: t.reshape(bs, length, self.heads_n, self.size_per_head).permute(0, 2, 1, 3)
        qs, ks, vs = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        logits = attention_scores(qs, ks).masked_fill(self.mask[:length, :length], float("-inf"))
        probs = self.dropout(scaled_attention_weights(logits, self.size_per_head))
        ctx = context_vectors(probs, vs).permute(0, 2, 1, 3)
        ctx = ctx.reshape(bs, length, self.heads_n * self.size_per_head)
        return self.out_proj(ctx)
