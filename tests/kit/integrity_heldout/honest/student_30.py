"""Attention, d2l.ai style (Dive into Deep Learning, ch. 11)."""
import math

import torch
from torch import nn


def masked_softmax(X, valid_lens=None, causal=False):
    """Perform softmax operation by masking elements on the last axis."""
    if causal:
        n = X.shape[-1]
        upper = torch.ones((n, n), dtype=torch.bool, device=X.device).triu(1)
        X = X.masked_fill(upper, -1e6)
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = X.reshape(-1, shape[-1])
    idx = torch.arange(shape[-1], device=X.device)[None, :]
    X[~(idx < valid_lens[:, None])] = -1e6
    return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    """Scaled dot product attention."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, causal=False):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, causal=causal)
        return torch.bmm(self.dropout(self.attention_weights), values)


def transpose_qkv(X, num_heads):
    """Transposition for parallel computation of multiple attention heads."""
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def transpose_output(X, num_heads):
    """Reverse the operation of transpose_qkv."""
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    return tuple(torch.rand(d_in, d_out) for _ in range(3))


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    return masked_softmax(scores / math.sqrt(d_k))


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    Q = torch.normal(0, 1, (num_trials, dim), generator=gen)
    K = torch.normal(0, 1, (num_trials, dim), generator=gen)
    dots = (Q * K).sum(axis=1)
    return float(dots.var()), float((dots / math.sqrt(dim)).var())


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        w = scaled_attention_weights(attention_scores(q, k), k.shape[-1])
        return context_vectors(w, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_k = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_v = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        w = scaled_attention_weights(attention_scores(q, k), k.shape[-1])
        return context_vectors(w, v)


# %% step: masking


def causal_mask(context_length):
    return torch.ones((context_length, context_length), dtype=torch.bool).triu(1)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    keep = torch.ones((n, n), dtype=attn_weights.dtype).tril()
    kept = attn_weights * keep
    return kept / kept.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hidden = causal_mask(scores.shape[-1])
    return nn.functional.softmax(scores.masked_fill(hidden, float('-inf')) / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    mask = (torch.rand(attn_weights.shape) > p).float()
    return mask * attn_weights / (1.0 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_k = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_v = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attention = DotProductAttention(dropout)
        self.context_length = context_length

    def forward(self, x):
        return self.attention(self.W_q(x), self.W_k(x), self.W_v(x), causal=True)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Multi-head attention."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_k = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_v = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_o = nn.Linear(d_out, d_out)

    def forward(self, x):
        # Shape of queries, keys, values after transposing:
        # (batch_size * num_heads, no. of queries, num_hiddens / num_heads)
        queries = transpose_qkv(self.W_q(x), self.num_heads)
        keys = transpose_qkv(self.W_k(x), self.num_heads)
        values = transpose_qkv(self.W_v(x), self.num_heads)
        output = self.attention(queries, keys, values, causal=True)
        output_concat = transpose_output(output, self.num_heads)
        return self.W_o(output_concat)
