import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    W = torch.rand(3, d_in, d_out)  # one draw of 3*d_in*d_out numbers = the three draws in order
    return W[0], W[1], W[2]


def project(x, W_query, W_key, W_value):
    W = torch.stack([W_query, W_key, W_value])  # (3, d_in, d_out)
    qkv = torch.einsum("...nd,rde->r...ne", x, W)
    return qkv[0], qkv[1], qkv[2]


def attention_scores(queries, keys):
    return torch.einsum("...qd,...kd->...qk", queries, keys)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.einsum("...qk,...kd->...qd", attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    qk = torch.randn(2, num_trials, dim, generator=gen, dtype=torch.float64)
    dots = qk.prod(dim=0).sum(dim=-1)
    return dots.var(unbiased=False).item(), (dots / math.sqrt(dim)).var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), q.shape[-1]), v)


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
    return torch.ones(context_length, context_length, dtype=torch.bool).triu(1)


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]).to(attn_weights.device), 0.0)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    s = scores.masked_fill(causal_mask(scores.shape[-1]).to(scores.device), float("-inf"))
    return scaled_attention_weights(s, d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    return attn_weights * (torch.rand_like(attn_weights) >= p) / (1 - p)


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
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n].bool(), float("-inf"))
        w = self.dropout(scaled_attention_weights(s, q.shape[-1]))
        return context_vectors(w, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads))

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], -1)


class MultiHeadAttention(nn.Module):
    """Each head reads its own rows of the projection weights, so no reshape of activations is needed."""

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
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(1))

    def _per_head(self, linear, x):
        # weight (d_out, d_in) -> (heads, head_dim, d_in); output (b, heads, n, head_dim)
        w = linear.weight.view(self.num_heads, self.head_dim, -1)
        out = torch.einsum("bni,hdi->bhnd", x, w)
        if linear.bias is not None:
            out = out + linear.bias.view(1, self.num_heads, 1, self.head_dim)
        return out

    def forward(self, x):
        n = x.shape[1]
        q = self._per_head(self.W_query, x)
        k = self._per_head(self.W_key, x)
        v = self._per_head(self.W_value, x)
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n].bool(), float("-inf"))
        w = self.dropout(scaled_attention_weights(s, self.head_dim))
        ctx = context_vectors(w, v)  # (b, h, n, hd)
        # fold the heads back into the features through the output projection's columns
        wo = self.out_proj.weight.view(-1, self.num_heads, self.head_dim)
        return torch.einsum("bhnd,ohd->bno", ctx, wo) + self.out_proj.bias
