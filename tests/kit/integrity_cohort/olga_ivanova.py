"""Olga Ivanova -- chapter 3 exercises."""

import math

import torch
from torch import nn


def attention_scores(queries, keys):
    return queries @ keys.transpose(-1, -2)


def scaled_attention_weights(scores, d_k):
    return nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def causal_mask(context_length):
    allowed = torch.tril(torch.ones(context_length, context_length, dtype=torch.bool))
    return allowed.logical_not()


def causal_attention_weights(scores, d_k):
    floor = torch.finfo(scores.dtype).min
    hidden = scores.masked_fill(causal_mask(scores.size(-1)).to(scores.device), floor)
    return nn.functional.softmax(hidden / math.sqrt(d_k), dim=-1)


def mask_and_renormalize(attn_weights):
    p = attn_weights.masked_fill(causal_mask(attn_weights.size(-1)).to(attn_weights.device), 0.0)
    return p / p.sum(dim=-1, keepdim=True)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    survivors = torch.rand_like(attn_weights) >= p
    return attn_weights * survivors / (1 - p) if p < 1 else torch.zeros_like(attn_weights)


def init_qkv_weights(d_in, d_out):
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(num_trials, dim, generator=gen)
    b = torch.randn(num_trials, dim, generator=gen)
    s = (a * b).sum(dim=-1)
    return float(s.var()), float((s / math.sqrt(dim)).var())


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("num_heads must divide d_out evenly")
        self.n_heads = num_heads
        self.dim_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        q = self.separate(self.W_query(x))
        k = self.separate(self.W_key(x))
        v = self.separate(self.W_value(x))
        t = q.size(-2)
        logits = attention_scores(q, k) / math.sqrt(self.dim_head)
        logits = logits.masked_fill(self.mask[:t, :t], torch.finfo(logits.dtype).min)
        p = self.dropout(nn.functional.softmax(logits, dim=-1))
        return self.combine(p @ v)

    def separate(self, tensor):
        shape = tensor.size()[:-1] + (self.n_heads, self.dim_head)
        return tensor.view(shape).permute(0, 2, 1, 3)

    def combine(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.n_heads * self.dim_head,))


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([each(x) for each in self.heads], dim=-1)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        return self.weigh(self.W_query(x), self.W_key(x), self.W_value(x))

    def weigh(self, q, k, v):
        t = q.size(-2)
        logits = attention_scores(q, k) / math.sqrt(k.size(-1))
        logits = logits.masked_fill(self.mask[:t, :t], torch.finfo(logits.dtype).min)
        p = self.dropout(nn.functional.softmax(logits, dim=-1))
        return p @ v


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        p = scaled_attention_weights(attention_scores(q, k), k.size(-1))
        return context_vectors(p, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        p = scaled_attention_weights(attention_scores(self.W_query(x), self.W_key(x)), self.W_key.out_features)
        return context_vectors(p, self.W_value(x))
