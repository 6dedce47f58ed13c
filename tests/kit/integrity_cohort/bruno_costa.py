"""Bruno Costa -- attention (functional first, modules as thin shells)."""

import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    def draw():
        return torch.rand(d_in, d_out)
    first = draw()
    second = draw()
    third = draw()
    return first, second, third


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    scaled = scores / math.sqrt(d_k)
    return torch.softmax(scaled, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    samples = torch.randn(num_trials * 2, dim, generator=g)
    q, k = samples[:num_trials], samples[num_trials:]
    d = (q * k).sum(1)
    return d.var().item(), (d / math.sqrt(dim)).var().item()


def self_attention(x, wq, wk, wv):
    q, k, v = project(x, wq, wk, wv)
    return context_vectors(scaled_attention_weights(attention_scores(q, k), q.shape[-1]), v)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return self_attention(x, self.W_query, self.W_key, self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), q.shape[-1]), v)


def causal_mask(context_length):
    full = torch.full((context_length, context_length), True)
    return torch.triu(full, diagonal=1)


def mask_and_renormalize(attn_weights):
    zeroed = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]), 0.0)
    return zeroed / zeroed.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(scores.masked_fill(causal_mask(scores.shape[-1]), -math.inf), d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.Dropout(p)(attn_weights)


def causal_self_attention(x, wq, wk, wv, mask, dropout):
    n = x.shape[-2]
    q, k, v = wq(x), wk(x), wv(x)
    scores = attention_scores(q, k).masked_fill(mask[:n, :n], -math.inf)
    return context_vectors(dropout(scaled_attention_weights(scores, q.shape[-1])), v)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        return causal_self_attention(x, self.W_query, self.W_key, self.W_value, self.mask, self.dropout)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out % num_heads must be 0")
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, d_out = x.shape[0], x.shape[1], self.out_proj.out_features
        heads = lambda t: t.view(b, n, self.num_heads, -1).transpose(1, 2)
        q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        scores = attention_scores(q, k).masked_fill(self.mask[:n, :n], -math.inf)
        out = context_vectors(self.dropout(scaled_attention_weights(scores, q.shape[-1])), v)
        return self.out_proj(out.transpose(1, 2).reshape(b, n, d_out))
