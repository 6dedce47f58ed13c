"""attention.py - my submission

Small helpers first, then the classes use them, so the same maths is written only once.
"""
import math

import torch
from torch import nn


# ---- helpers --------------------------------------------------------------

def _normalise(scores):
    # softmax so that the weights for each key add up to one
    return torch.softmax(scores, dim=-2)


def _scale(scores, d_k):
    return scores / math.sqrt(d_k)


def _hide_future(scores, fill):
    n = scores.shape[-1]
    hidden = causal_mask(n).to(scores.device)
    return scores.masked_fill(hidden, fill)


def _split(t, heads):
    b, n, d = t.shape
    return t.view(b, n, heads, d // heads).transpose(1, 2)


def _merge(t):
    b, h, n, hd = t.shape
    return t.transpose(1, 2).reshape(b, n, h * hd)


# ---- step 1 ----------------------------------------------------------------

def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# ---- step 2 ----------------------------------------------------------------

def attention_scores(queries, keys):
    return queries @ keys.mT


def scaled_attention_weights(scores, d_k):
    return _normalise(_scale(scores, d_k))


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    raw = (q * k).sum(-1)
    return raw.var(unbiased=False).item(), _scale(raw, dim).var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.shape[-1]), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.shape[-1]), v)


# ---- step 3 ----------------------------------------------------------------

def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(1) > 0


def mask_and_renormalize(attn_weights):
    w = _hide_future(attn_weights, 0.0)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return _normalise(_scale(_hide_future(scores, -torch.inf), d_k))


# ---- step 4 ----------------------------------------------------------------

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    return attn_weights * (torch.rand_like(attn_weights) >= p) / (1 - p)


# ---- steps 5-7 -------------------------------------------------------------

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
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], -torch.inf)
        w = self.dropout(_normalise(_scale(s, k.shape[-1])))
        return w @ v


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q = _split(self.W_query(x), self.num_heads)
        k = _split(self.W_key(x), self.num_heads)
        v = _split(self.W_value(x), self.num_heads)
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], -torch.inf)
        w = self.dropout(_normalise(_scale(s, k.shape[-1])))
        return self.out_proj(_merge(w @ v))
