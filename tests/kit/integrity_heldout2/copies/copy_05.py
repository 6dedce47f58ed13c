# Attention mechanisms - exercise

import math

import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    # three random matrices (uniform in [0, 1)), in order: query, key, value
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    qs = x.matmul(W_query)
    ks = x.matmul(W_key)
    vs = x.matmul(W_value)
    return qs, ks, vs


def attention_scores(queries, keys):
    # dot product of every query with every key
    return queries.matmul(keys.permute(*range(keys.dim() - 2), -1, -2))


def scaled_attention_weights(scores, d_k):
    factor = d_k ** 0.5
    return torch.softmax(scores / factor, dim=-1)


def context_vectors(attn_weights, values):
    # weighted sum of the value vectors
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    prods = (q * k).sum(dim=-1)
    scaled = prods / math.sqrt(dim)
    # population variance (no Bessel correction)
    v_before = prods.var(unbiased=False).item()
    v_after = scaled.var(unbiased=False).item()
    return v_before, v_after


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        qs = x.matmul(self.W_query)
        ks = x.matmul(self.W_key)
        vs = x.matmul(self.W_value)
        sc = qs.matmul(ks.permute(1, 0))
        w = torch.softmax(sc / ks.shape[-1] ** 0.5, dim=-1)
        return w.matmul(vs)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        qs = self.W_query(x)
        ks = self.W_key(x)
        vs = self.W_value(x)
        sc = qs.matmul(ks.permute(1, 0))
        w = torch.softmax(sc / ks.shape[-1] ** 0.5, dim=-1)
        return w.matmul(vs)


def causal_mask(context_length):
    # True above the diagonal: the future stays hidden
    return ~torch.ones(context_length, context_length, dtype=torch.bool).tril()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    lower = torch.ones(n, n, device=attn_weights.device).tril()
    masked = attn_weights * lower
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    future = causal_mask(n).to(scores.device)
    sc = scores.masked_fill(future, float("-inf"))
    return torch.softmax(sc / d_k ** 0.5, dim=-1)


def attention_dropout(attn_weights, p, training=True):
    # in evaluation nothing is touched
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    keep_mask = (torch.rand_like(attn_weights) >= p).to(attn_weights.dtype)
    return attn_weights * keep_mask * (1.0 / (1.0 - p))


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        batch, n, _ = x.shape
        qs = self.W_query(x)
        ks = self.W_key(x)
        vs = self.W_value(x)
        sc = qs.matmul(ks.permute(0, 2, 1))
        # cut the mask down to the real sequence length
        sc = sc.masked_fill(self.mask[:n, :n], float("-inf"))
        w = torch.softmax(sc / ks.shape[-1] ** 0.5, dim=-1)
        w = self.dropout(w)
        return w.matmul(vs)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        head_list = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        self.heads = nn.ModuleList(head_list)

    def forward(self, x):
        return torch.cat([hd_mod(x) for hd_mod in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out should be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        batch, n, _ = x.shape
        # (batch, n, d_out) -> (batch, n, heads, head_dim) -> (batch, heads, n, head_dim)
        shape4 = (batch, n, self.num_heads, self.head_dim)
        qs = self.W_query(x).reshape(shape4).permute(0, 2, 1, 3)
        ks = self.W_key(x).reshape(shape4).permute(0, 2, 1, 3)
        vs = self.W_value(x).reshape(shape4).permute(0, 2, 1, 3)

        sc = qs.matmul(ks.permute(0, 1, 3, 2))
        sc = sc.masked_fill(self.mask[:n, :n], float("-inf"))
        w = torch.softmax(sc / self.head_dim ** 0.5, dim=-1)
        w = self.dropout(w)

        # put the heads back together: (batch, heads, n, hd) -> (batch, n, heads, hd) -> (batch, n, d_out)
        ctx = w.matmul(vs).permute(0, 2, 1, 3).reshape(batch, n, self.d_out)
        return self.out_proj(ctx)
