import math

import numpy as np
import torch
import torch.nn as nn


# %% step: projection

def init_qkv_weights(d_in, d_out):
    mats = []
    mats.append(torch.rand(d_in, d_out))  # W_query
    mats.append(torch.rand(d_in, d_out))  # W_key
    mats.append(torch.rand(d_in, d_out))  # W_value
    return mats[0], mats[1], mats[2]


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# %% step: scaling

def attention_scores(queries, keys):
    if queries.dim() == 3:
        return torch.bmm(queries, keys.transpose(1, 2))
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / np.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    if attn_weights.dim() == 3:
        return torch.bmm(attn_weights, values)
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((num_trials, dim))
    k = rng.standard_normal((num_trials, dim))
    dots = np.einsum("ij,ij->i", q, k)
    return float(np.var(dots)), float(np.var(dots / np.sqrt(dim)))


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = torch.mm(x, self.W_query)
        k = torch.mm(x, self.W_key)
        v = torch.mm(x, self.W_value)
        a = torch.softmax(torch.mm(q, k.t()) / np.sqrt(k.shape[1]), dim=1)
        return torch.mm(a, v)


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
        a = torch.softmax(torch.mm(q, k.t()) / np.sqrt(k.shape[1]), dim=1)
        return torch.mm(a, v)


# %% step: masking

def causal_mask(context_length):
    m = np.triu(np.ones((context_length, context_length), dtype=bool), k=1)
    return torch.from_numpy(m)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    keep = torch.from_numpy(np.tril(np.ones((n, n), dtype=np.float32))).to(attn_weights.dtype)
    w = attn_weights * keep
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    m = causal_mask(scores.shape[-1])
    return torch.softmax(scores.masked_fill(m, -np.inf) / np.sqrt(d_k), dim=-1)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    layer = nn.Dropout(p)
    layer.train()
    return layer(attn_weights)


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
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.bmm(q, k.transpose(1, 2))
        s = s.masked_fill(self.mask[:T, :T], -np.inf)
        a = torch.softmax(s / np.sqrt(k.shape[-1]), dim=-1)
        a = self.dropout(a)
        return torch.bmm(a, v)


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.concat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        B, T, _ = x.shape
        H, D = self.num_heads, self.head_dim

        def fold(t):
            # (B, T, H*D) -> (B*H, T, D)
            return t.reshape(B, T, H, D).permute(0, 2, 1, 3).reshape(B * H, T, D)

        q, k, v = fold(self.W_query(x)), fold(self.W_key(x)), fold(self.W_value(x))
        s = torch.bmm(q, k.transpose(1, 2))
        s = s.masked_fill(self.mask[:T, :T], -np.inf)
        a = self.dropout(torch.softmax(s / np.sqrt(D), dim=-1))
        o = torch.bmm(a, v)  # (B*H, T, D)
        o = o.reshape(B, H, T, D).permute(0, 2, 1, 3).reshape(B, T, self.d_out)
        return self.out_proj(o)
