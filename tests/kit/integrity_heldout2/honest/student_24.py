import math

import torch
import torch.nn as nn

# I like einsum: the index letters say what is summed.
#   n, m = token positions   d = feature   b = batch   h = head


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    q = torch.einsum('...i,io->...o', x, W_query)
    k = torch.einsum('...i,io->...o', x, W_key)
    v = torch.einsum('...i,io->...o', x, W_value)
    return q, k, v


def attention_scores(queries, keys):
    return torch.einsum('...nd,...md->...nm', queries, keys)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / d_k ** 0.5, dim=-1)


def context_vectors(attn_weights, values):
    return torch.einsum('...nm,...md->...nd', attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    dots = torch.einsum('td,td->t', q, k)
    scaled = dots / dim ** 0.5
    return dots.var(unbiased=False).item(), scaled.var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = torch.einsum('ni,io->no', x, self.W_query)
        k = torch.einsum('ni,io->no', x, self.W_key)
        v = torch.einsum('ni,io->no', x, self.W_value)
        w = torch.softmax(torch.einsum('nd,md->nm', q, k), dim=-1)
        return torch.einsum('nm,md->nd', w, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = torch.softmax(torch.einsum('nd,md->nm', q, k), dim=-1)
        return torch.einsum('nm,md->nd', w, v)


def causal_mask(context_length):
    i = torch.arange(context_length)
    return i.unsqueeze(-1) < i.unsqueeze(0)


def mask_and_renormalize(attn_weights):
    keep = (~causal_mask(attn_weights.shape[-1])).to(attn_weights.dtype)
    w = torch.einsum('...nm,nm->...nm', attn_weights, keep)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hidden = causal_mask(scores.shape[-1])
    return torch.softmax(scores.masked_fill(hidden, -float('inf')) / d_k ** 0.5, dim=-1)


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
        self.register_buffer('mask', causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.einsum('bnd,bmd->bnm', q, k)
        s = s.masked_fill(self.mask[:n, :n], -float('inf'))
        w = self.dropout(torch.softmax(s, dim=-1))
        return torch.einsum('bnm,bmd->bnd', w, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        h, d = self.num_heads, self.head_dim
        q = self.W_query(x).reshape(b, n, h, d)
        k = self.W_key(x).reshape(b, n, h, d)
        v = self.W_value(x).reshape(b, n, h, d)
        s = torch.einsum('bnhd,bmhd->bhnm', q, k)
        s = s.masked_fill(self.mask[:n, :n], -float('inf'))
        w = self.dropout(torch.softmax(s, dim=-1))
        out = torch.einsum('bhnm,bmhd->bnhd', w, v).reshape(b, n, h * d)
        return self.out_proj(out)
