import math
import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    a = torch.rand(d_in, d_out)
    b = torch.rand(d_in, d_out)
    c = torch.rand(d_in, d_out)
    return a, b, c


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-1, -2)


def scaled_attention_weights(scores, d_k):
    return (scores / d_k).softmax(dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    s = (q * k).sum(1)
    t = s / math.sqrt(dim)
    return s.var(unbiased=False).item(), t.var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        w = (q @ k.T / k.shape[-1]).softmax(-1)
        return w @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = (q @ k.T / k.shape[-1]).softmax(-1)
        return w @ v


def causal_mask(context_length):
    n = context_length
    return torch.ones(n, n).triu(1).bool()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    w = attn_weights.masked_fill(causal_mask(n), 0)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    s = scores.masked_fill(causal_mask(n), -torch.inf)
    return (s / d_k).softmax(-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    m = torch.rand_like(attn_weights) >= p
    return attn_weights * m / (1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(1))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = q @ k.transpose(1, 2)
        s.masked_fill_(self.mask[:n, :n].bool(), -torch.inf)
        w = self.dropout((s / k.shape[-1]).softmax(-1))
        return w @ v


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for i in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.h = num_heads
        self.hd = d_out // num_heads
        self.d = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(1))

    def forward(self, x):
        b, n, _ = x.shape
        q = self.W_query(x).view(b, n, self.h, self.hd).transpose(1, 2)
        k = self.W_key(x).view(b, n, self.h, self.hd).transpose(1, 2)
        v = self.W_value(x).view(b, n, self.h, self.hd).transpose(1, 2)
        s = q @ k.transpose(2, 3)
        s.masked_fill_(self.mask[:n, :n].bool(), -torch.inf)
        w = self.dropout((s / self.hd).softmax(-1))
        o = (w @ v).transpose(1, 2).reshape(b, n, self.d)
        return self.out_proj(o)
