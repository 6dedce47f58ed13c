# Attention exercise -- my version, built around one `attention` helper like in
# "The Annotated Transformer" (Harvard NLP).
import math

import torch
from torch import nn


def attention(query, key, value, mask=None, dropout=None):
    """Scaled dot product attention; mask is True where a position may be attended to."""
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value)


def init_qkv_weights(d_in, d_out):
    weights = []
    for _ in range(3):
        weights.append(torch.rand(d_in, d_out))
    return tuple(weights)


def project(x, W_query, W_key, W_value):
    query = torch.matmul(x, W_query)
    key = torch.matmul(x, W_key)
    value = torch.matmul(x, W_value)
    return query, key, value


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    dots = torch.einsum("nd,nd->n", q, k)
    return torch.var(dots, unbiased=False).item(), torch.var(dots / math.sqrt(dim), unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return attention(x @ self.W_query, x @ self.W_key, x @ self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return attention(self.W_query(x), self.W_key(x), self.W_value(x))


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length), diagonal=1) == 1


def mask_and_renormalize(attn_weights):
    future = causal_mask(attn_weights.size(-1))
    attn_weights = attn_weights.masked_fill(future, 0)
    return attn_weights / attn_weights.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    future = causal_mask(scores.size(-1))
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return attn_weights.new_zeros(attn_weights.shape)
    survivors = torch.rand(attn_weights.shape, device=attn_weights.device) >= p
    return attn_weights * survivors / (1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        n = x.size(1)
        allowed = self.mask[:n, :n] == 0
        return attention(self.W_query(x), self.W_key(x), self.W_value(x), mask=allowed, dropout=self.dropout)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_k = d_out // num_heads
        self.h = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        nbatches, n, _ = x.shape
        allowed = (self.mask[:n, :n] == 0)[None, None]
        # 1) linear projections, then split d_out into h heads of size d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin in (self.W_query, self.W_key, self.W_value)
        ]
        # 2) attention on all heads at once
        x = attention(query, key, value, mask=allowed, dropout=self.dropout)
        # 3) concat the heads and apply the final linear
        x = x.contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.out_proj(x)
