# Tamar Cohen: attention homework
# (uses bmm everywhere, as in Peter Bloem's transformer blog post)

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def init_qkv_weights(d_in, d_out):
    q = torch.rand(d_in, d_out)
    k = torch.rand(d_in, d_out)
    v = torch.rand(d_in, d_out)
    return q, k, v


def project(x, W_query, W_key, W_value):
    flat = x.reshape(-1, x.shape[-1])
    outs = [(flat @ W).reshape(*x.shape[:-1], W.shape[1]) for W in (W_query, W_key, W_value)]
    return outs[0], outs[1], outs[2]


def attention_scores(queries, keys):
    if queries.dim() == 2:
        return queries @ keys.t()
    lead = queries.shape[:-2]
    q = queries.reshape(-1, *queries.shape[-2:])
    k = keys.reshape(-1, *keys.shape[-2:])
    return torch.bmm(q, k.transpose(1, 2)).reshape(*lead, q.shape[1], k.shape[1])


def scaled_attention_weights(scores, d_k):
    # softmax along the last axis
    return F.softmax(scores, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    qs = torch.randn(num_trials, dim, generator=g)
    ks = torch.randn(num_trials, dim, generator=g)
    raw = torch.bmm(qs.view(num_trials, 1, dim), ks.view(num_trials, dim, 1)).squeeze()
    return raw.var().item(), (raw / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        dot = attention_scores(queries, keys) / math.sqrt(keys.shape[-1])
        return F.softmax(dot, dim=-1) @ values


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        dot = attention_scores(queries, keys) / math.sqrt(keys.shape[-1])
        return F.softmax(dot, dim=-1) @ values


def causal_mask(context_length):
    i, j = torch.triu_indices(context_length, context_length, offset=1)
    m = torch.zeros(context_length, context_length, dtype=torch.bool)
    m[i, j] = True
    return m


def mask_and_renormalize(attn_weights):
    m = causal_mask(attn_weights.shape[-1])
    out = attn_weights.masked_fill(m, 0)
    return out / out.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    m = causal_mask(scores.shape[-1])
    return F.softmax(scores.masked_fill(m, float('-inf')) / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if training is False or p == 0:
        return attn_weights
    drop = torch.rand(attn_weights.shape, device=attn_weights.device) < p
    return attn_weights.masked_fill(drop, 0) / (1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', causal_mask(context_length))

    def forward(self, x):
        t = x.size(1)
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        dot = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(keys.size(2))
        dot = dot.masked_fill(self.mask[:t, :t], float('-inf'))
        return torch.bmm(self.dropout(F.softmax(dot, dim=2)), values)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)
        ])

    def forward(self, x):
        return torch.cat([att(x) for att in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError('d_out should be divisible by num_heads')
        self.num_heads = num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', causal_mask(context_length))

    def forward(self, x):
        b, t, _ = x.size()
        h, s = self.num_heads, self.d_out // self.num_heads

        def fold(y):
            return y.view(b, t, h, s).transpose(1, 2).reshape(b * h, t, s)

        queries, keys, values = fold(self.W_query(x)), fold(self.W_key(x)), fold(self.W_value(x))
        dot = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(s)
        dot = dot.masked_fill(self.mask[:t, :t], float('-inf'))
        out = torch.bmm(self.dropout(F.softmax(dot, dim=2)), values)
        out = out.view(b, h, t, s).transpose(1, 2).reshape(b, t, h * s)
        return self.out_proj(out)
