# Dmitri Volkov, attention assignment
# I started from the exercise file and deleted the long docstrings.

import math

import torch
from torch import nn


# %% step: projection

def init_qkv_weights(d_in, d_out):
    mats = []
    for _ in range(3):  # query, key, value -- in this order
        mats.append(torch.rand(d_in, d_out))
    return tuple(mats)


def project(x, W_query, W_key, W_value):
    q = x.matmul(W_query)
    k = x.matmul(W_key)
    v = x.matmul(W_value)
    return q, k, v


# %% step: scaling

def attention_scores(queries, keys):
    return queries.matmul(keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator()
    g.manual_seed(seed)
    pairs = torch.randn(2, num_trials, dim, generator=g)
    products = (pairs[0] * pairs[1]).sum(-1)
    return products.var().item(), (products / dim ** 0.5).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = x.matmul(self.W_query)
        k = x.matmul(self.W_key)
        v = x.matmul(self.W_value)
        w = (q.matmul(k.T) / math.sqrt(k.shape[-1])).softmax(dim=-1)
        return w.matmul(v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = (q.matmul(k.T) / math.sqrt(k.shape[-1])).softmax(dim=-1)
        return w.matmul(v)


# %% step: masking

def causal_mask(context_length):
    idx = torch.arange(context_length)
    return idx[None, :] > idx[:, None]


def mask_and_renormalize(attn_weights):
    n = attn_weights.size(-1)
    lower = (~causal_mask(n)).to(attn_weights.dtype)
    w = attn_weights * lower
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.size(-1)
    s = scores.masked_fill(causal_mask(n), float("-inf"))
    return (s / math.sqrt(d_k)).softmax(dim=-1)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    # zero each weight with probability p
    if not training:
        return attn_weights
    drop = (torch.rand(attn_weights.shape) < p)
    return attn_weights.masked_fill(drop, 0.0)


# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = q.matmul(k.transpose(1, 2)).masked_fill(self.mask[:n, :n], float("-inf"))
        w = self.dropout((s / math.sqrt(k.size(-1))).softmax(dim=-1))
        return w.matmul(v)


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=qkv_bias))

    def forward(self, x):
        return torch.cat(tuple(head(x) for head in self.heads), dim=2)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.h = num_heads
        self.hd = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, d = x.shape
        q = self.W_query(x).reshape(b, n, self.h, self.hd).transpose(1, 2)
        k = self.W_key(x).reshape(b, n, self.h, self.hd).transpose(1, 2)
        v = self.W_value(x).reshape(b, n, self.h, self.hd).transpose(1, 2)
        s = q.matmul(k.transpose(-2, -1)).masked_fill(self.mask[:n, :n], float("-inf"))
        w = self.dropout((s / math.sqrt(self.hd)).softmax(dim=-1))
        out = w.matmul(v).transpose(1, 2).reshape(b, n, self.h * self.hd)
        return self.out_proj(out)
