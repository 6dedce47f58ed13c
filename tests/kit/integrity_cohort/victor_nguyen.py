# Victor Nguyen -- I like einsum, so I used it wherever a product appears.

import math
import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    W = torch.stack([W_query, W_key, W_value])             # (3, d_in, d_out)
    qkv = torch.einsum("...nd,rde->r...ne", x, W)
    return qkv[0], qkv[1], qkv[2]


def attention_scores(queries, keys):
    return torch.einsum("...id,...jd->...ij", queries, keys)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.einsum("...ij,...jd->...id", attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(num_trials, dim, generator=gen)
    b = torch.randn(num_trials, dim, generator=gen)
    dots = torch.einsum("td,td->t", a, b)
    return torch.var(dots).item(), torch.var(dots / math.sqrt(dim)).item()


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
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.shape[-1]), v)


def causal_mask(context_length):
    i = torch.arange(context_length)
    return torch.gt(i.view(1, -1), i.view(-1, 1))


def mask_and_renormalize(attn_weights):
    keep = (~causal_mask(attn_weights.shape[-1])).float()
    w = torch.einsum("...ij,ij->...ij", attn_weights, keep)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    masked = scores.masked_fill(causal_mask(scores.shape[-1]), -math.inf)
    return scaled_attention_weights(masked, d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    keep = torch.rand_like(attn_weights).ge(p)
    return attn_weights.mul(keep).div(1 - p)


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
        s = torch.einsum("bid,bjd->bij", q, k).masked_fill(self.mask[:n, :n], -math.inf)
        w = self.dropout(torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1))
        return torch.einsum("bij,bjd->bid", w, v)


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
        if d_out % num_heads:
            raise ValueError(f"{num_heads} heads do not divide d_out={d_out}")
        self.h = num_heads
        self.dh = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        q = self.W_query(x).view(b, n, self.h, self.dh)
        k = self.W_key(x).view(b, n, self.h, self.dh)
        v = self.W_value(x).view(b, n, self.h, self.dh)
        s = torch.einsum("bihd,bjhd->bhij", q, k).masked_fill(self.mask[:n, :n], -math.inf)
        w = self.dropout(torch.softmax(s / math.sqrt(self.dh), dim=-1))
        out = torch.einsum("bhij,bjhd->bihd", w, v).reshape(b, n, self.h * self.dh)
        return self.out_proj(out)
