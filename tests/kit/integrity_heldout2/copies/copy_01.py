"""Attention mechanisms -- homework submission.

Each function below is one step of the chapter.
"""

import math

import torch
from torch import nn


# ----- masking ---------------------------------------------------------------

def causal_mask(context_length):
    """True strictly above the main diagonal (future tokens)."""
    upper = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    return upper.bool()


def mask_and_renormalize(attn_weights):
    """Drop future weights and make each row sum to one again."""
    size = attn_weights.shape[-1]
    lower_ones = torch.tril(torch.ones(size, size))
    kept = attn_weights * lower_ones
    totals = kept.sum(dim=-1, keepdim=True)
    return kept / totals


def causal_attention_weights(scores, d_k):
    """Hide the future with -inf, then a scaled softmax."""
    size = scores.shape[-1]
    upper = torch.triu(torch.ones(size, size), diagonal=1)
    hidden_scores = scores.masked_fill(upper.bool(), -torch.inf)
    return torch.softmax(hidden_scores / math.sqrt(d_k), dim=-1)


# ----- projection ------------------------------------------------------------

def init_qkv_weights(d_in, d_out):
    """Random query/key/value matrices (draw order: q, k, v)."""
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    """Map the inputs to queries, keys and values."""
    v = torch.matmul(x, W_value)
    k = torch.matmul(x, W_key)
    q = torch.matmul(x, W_query)
    return q, k, v


# ----- scaling ---------------------------------------------------------------

def context_vectors(attn_weights, values):
    """Weighted sum of the values."""
    ctx = torch.matmul(attn_weights, values)
    return ctx


def scaled_attention_weights(scores, d_k):
    """Softmax of the scores divided by sqrt(d_k)."""
    probs = torch.softmax(scores / math.sqrt(d_k), dim=-1)
    return probs


def attention_scores(queries, keys):
    """Dot product of every query with every key."""
    omega = torch.matmul(queries, keys.transpose(-1, -2))
    return omega


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Empirical variance of q.k without and with the 1/sqrt(dim) factor."""
    rng = torch.Generator().manual_seed(seed)
    raw, scaled = [], []
    for _ in range(num_trials):
        a = torch.randn(dim, generator=rng, dtype=torch.float64)
        b = torch.randn(dim, generator=rng, dtype=torch.float64)
        prod = torch.dot(a, b)
        raw.append(prod)
        scaled.append(prod / math.sqrt(dim))
    before = torch.stack(raw).var(unbiased=False).item()
    after = torch.stack(scaled).var(unbiased=False).item()
    return before, after


class SelfAttention_v2(nn.Module):
    """Self-attention built on nn.Linear layers."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        v = self.W_value(x)
        k = self.W_key(x)
        q = self.W_query(x)
        sc = torch.matmul(q, k.T)
        probs = torch.softmax(sc / math.sqrt(k.shape[-1]), dim=-1)
        return torch.matmul(probs, v)


class SelfAttention_v1(nn.Module):
    """Self-attention built on raw parameter matrices."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        v = torch.matmul(x, self.W_value)
        k = torch.matmul(x, self.W_key)
        q = torch.matmul(x, self.W_query)
        sc = torch.matmul(q, k.T)
        probs = torch.softmax(sc / math.sqrt(k.shape[-1]), dim=-1)
        return torch.matmul(probs, v)


# ----- dropout ---------------------------------------------------------------

def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout (identity outside training)."""
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    survivors = (torch.rand_like(attn_weights) >= p).float()
    return attn_weights * survivors / (1 - p)


# ----- modules ---------------------------------------------------------------

class MultiHeadAttention(nn.Module):
    """Heads obtained by splitting one big projection."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "num_heads has to divide d_out"
        self.n_heads = num_heads
        self.per_head = d_out // num_heads
        self.width = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        bs, seq, _ = x.shape
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)

        q = q.reshape(bs, seq, self.n_heads, self.per_head).permute(0, 2, 1, 3)
        k = k.reshape(bs, seq, self.n_heads, self.per_head).permute(0, 2, 1, 3)
        v = v.reshape(bs, seq, self.n_heads, self.per_head).permute(0, 2, 1, 3)

        sc = torch.matmul(q, k.permute(0, 1, 3, 2))
        sc.masked_fill_(self.mask.bool()[:seq, :seq], -torch.inf)
        probs = torch.softmax(sc / math.sqrt(k.shape[-1]), dim=-1)
        probs = self.dropout(probs)

        out = torch.matmul(probs, v).permute(0, 2, 1, 3)
        out = out.contiguous().reshape(bs, seq, self.width)
        return self.out_proj(out)


class CausalAttention(nn.Module):
    """One causal head with dropout on the weights."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.width = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        bs, seq, _ = x.shape
        v = self.W_value(x)
        k = self.W_key(x)
        q = self.W_query(x)
        sc = torch.matmul(q, k.permute(0, 2, 1))
        sc.masked_fill_(self.mask.bool()[:seq, :seq], -torch.inf)
        probs = torch.softmax(sc / math.sqrt(k.shape[-1]), dim=-1)
        probs = self.dropout(probs)
        return torch.matmul(probs, v)


class MultiHeadAttentionWrapper(nn.Module):
    """Several CausalAttention heads side by side."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([m(x) for m in self.heads], dim=-1)
