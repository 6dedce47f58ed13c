"""attention.py -- Mehmet's submission"""
import math
import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    w1 = torch.rand(d_in, d_out)
    w2 = torch.rand(d_in, d_out)
    w3 = torch.rand(d_in, d_out)
    return w1, w2, w3


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ torch.transpose(keys, -1, -2)


def scaled_attention_weights(scores, d_k):
    return nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    dots = torch.bmm(q.view(num_trials, 1, dim), k.view(num_trials, dim, 1)).view(-1)
    return float(dots.var()), float((dots / math.sqrt(dim)).var())


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
        return scaled_attention_weights(attention_scores(q, k), k.shape[1]) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        return scaled_attention_weights(attention_scores(q, k), k.shape[1]) @ v


def causal_mask(context_length):
    return torch.tril(torch.ones(context_length, context_length)) < 0.5


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]), 0.)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    s = scores.masked_fill(causal_mask(scores.shape[-1]), -math.inf)
    return scaled_attention_weights(s, d_k)


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("m", causal_mask(context_length))

    def forward(self, x):
        L = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = attention_scores(q, k).masked_fill(self.m[:L, :L], -math.inf)
        return self.drop(scaled_attention_weights(s, k.shape[-1]) @ v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for i in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.nh = num_heads
        self.hd = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("m", causal_mask(context_length))

    def forward(self, x):
        B, L, _ = x.shape
        q = self.W_query(x).view(B, L, self.nh, self.hd).transpose(1, 2)
        k = self.W_key(x).view(B, L, self.nh, self.hd).transpose(1, 2)
        v = self.W_value(x).view(B, L, self.nh, self.hd).transpose(1, 2)
        s = attention_scores(q, k).masked_fill(self.m[:L, :L], -math.inf)
        o = (scaled_attention_weights(s, self.hd) @ v).transpose(1, 2).reshape(B, L, self.nh * self.hd)
        return self.drop(self.out_proj(o))
