"""Attention mechanisms (exercise). Written after working through the d2l.ai attention chapter."""
import math

import torch
from torch import nn
from torch.nn import functional as F


def init_qkv_weights(d_in, d_out):
    shapes = (d_in, d_out)
    W_query = torch.rand(*shapes)
    W_key = torch.rand(*shapes)
    W_value = torch.rand(*shapes)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    queries = torch.matmul(x, W_query)
    keys = torch.matmul(x, W_key)
    values = torch.matmul(x, W_value)
    return queries, keys, values


def attention_scores(queries, keys):
    # (..., n, d) x (..., d, n) -> (..., n, n)
    return torch.matmul(queries, keys.swapaxes(-1, -2))


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / d_k, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator()
    rng.manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=rng, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=rng, dtype=torch.float64)
    s = (q * k).sum(axis=1)
    return s.var(unbiased=False).item(), (s / math.sqrt(dim)).var(unbiased=False).item()


def sequence_mask_causal(n, device=None):
    """True above the diagonal: keys that lie in the future of the query."""
    steps = torch.arange(n, device=device)
    return steps[None, :] > steps[:, None]


def masked_softmax(X, hidden, value=-1e6):
    if hidden is not None:
        X = X.masked_fill(hidden, value)
    return F.softmax(X, dim=-1)


class DotProductAttention(nn.Module):
    """Scaled dot product attention."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = dropout

    def forward(self, queries, keys, values, hidden=None):
        d = queries.shape[-1]
        scores = torch.matmul(queries, keys.swapaxes(-1, -2)) / d
        self.attention_weights = masked_softmax(scores, hidden)
        return torch.matmul(self.dropout(self.attention_weights), values)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, X):
        queries, keys, values = project(X, self.W_query, self.W_key, self.W_value)
        d = keys.shape[-1]
        weights = masked_softmax(torch.matmul(queries, keys.T) / d, None)
        return torch.matmul(weights, values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, X):
        queries, keys, values = self.W_query(X), self.W_key(X), self.W_value(X)
        d = keys.shape[-1]
        weights = masked_softmax(torch.matmul(queries, keys.T) / d, None)
        return torch.matmul(weights, values)


def causal_mask(context_length):
    return sequence_mask_causal(context_length)


def mask_and_renormalize(attn_weights):
    hidden = sequence_mask_causal(attn_weights.shape[-1], attn_weights.device)
    kept = torch.where(hidden, torch.zeros_like(attn_weights), attn_weights)
    return kept / kept.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hidden = sequence_mask_causal(scores.shape[-1], scores.device)
    return masked_softmax(scores / d_k, hidden, value=float("-inf"))


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    keep = torch.rand_like(attn_weights) >= p
    return attn_weights * keep.to(attn_weights.dtype) / (1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.attention = DotProductAttention(self.dropout)
        self.register_buffer("mask", sequence_mask_causal(context_length))

    def forward(self, X):
        n = X.shape[1]
        return self.attention(self.W_query(X), self.W_key(X), self.W_value(X), self.mask[:n, :n])


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, X):
        return torch.cat([h(X) for h in self.heads], dim=2)


def transpose_qkv(X, num_heads):
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    return X.permute(0, 2, 1, 3)


def transpose_output(X):
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.attention = DotProductAttention(self.dropout)
        self.register_buffer("mask", sequence_mask_causal(context_length))

    def forward(self, X):
        n = X.shape[1]
        queries = transpose_qkv(self.W_query(X), self.num_heads)
        keys = transpose_qkv(self.W_key(X), self.num_heads)
        values = transpose_qkv(self.W_value(X), self.num_heads)
        output = self.attention(queries, keys, values, self.mask[:n, :n])
        return self.out_proj(transpose_output(output))
