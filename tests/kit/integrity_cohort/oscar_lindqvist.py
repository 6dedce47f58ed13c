"""Oscar Lindqvist. Attention, following the structure of Dive into Deep Learning
(masked_softmax, transpose_qkv / transpose_output), but with a causal mask."""

import math

import torch
from torch import nn


def masked_softmax(X, mask=None):
    """Softmax over the last axis; entries where `mask` is True get zero weight."""
    if mask is None:
        return nn.functional.softmax(X, dim=-1)
    X = X.masked_fill(mask, -1e6)
    return nn.functional.softmax(X, dim=-1)


def transpose_qkv(X, num_heads):
    """(batch, n, num_hiddens) -> (batch * num_heads, n, num_hiddens / num_heads)."""
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def transpose_output(X, num_heads):
    """Reverse the operation of transpose_qkv."""
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


def init_qkv_weights(d_in, d_out):
    W_q = torch.rand(d_in, d_out)
    W_k = torch.rand(d_in, d_out)
    W_v = torch.rand(d_in, d_out)
    return W_q, W_k, W_v


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries, keys):
    return queries @ keys.swapaxes(-1, -2)


def scaled_attention_weights(scores, d_k):
    return masked_softmax(scores / math.sqrt(d_k))


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    queries = torch.randn(num_trials, 1, dim, generator=gen)
    keys = torch.randn(num_trials, 1, dim, generator=gen)
    scores = torch.bmm(queries, keys.transpose(1, 2)).reshape(-1)
    return scores.var().item(), (scores / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        d = queries.shape[-1]
        self.attention_weights = masked_softmax(attention_scores(queries, keys) / math.sqrt(d))
        return self.attention_weights @ values


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        d = queries.shape[-1]
        self.attention_weights = masked_softmax(attention_scores(queries, keys) / math.sqrt(d))
        return self.attention_weights @ values


def causal_mask(context_length):
    steps = torch.arange(context_length)
    return steps.reshape(1, -1) > steps.reshape(-1, 1)


def mask_and_renormalize(attn_weights):
    mask = causal_mask(attn_weights.shape[-1]).to(attn_weights.device)
    kept = attn_weights * (~mask)
    return kept / kept.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    mask = causal_mask(scores.shape[-1]).to(scores.device)
    return nn.functional.softmax(scores.masked_fill(mask, float("-inf")) / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p, True)


class DotProductAttention(nn.Module):
    """Scaled dot product attention with a causal mask and dropout on the weights."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, mask):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, mask)
        return torch.bmm(self.dropout(self.attention_weights), values)


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
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
        weights = masked_softmax(scores, self.mask[:n, :n])
        return torch.bmm(self.dropout(weights), values)


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
            raise ValueError("num_hiddens must be divisible by num_heads")
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        queries = transpose_qkv(self.W_query(x), self.num_heads)
        keys = transpose_qkv(self.W_key(x), self.num_heads)
        values = transpose_qkv(self.W_value(x), self.num_heads)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
        weights = masked_softmax(scores, self.mask[:n, :n])
        output = torch.bmm(self.dropout(weights), values)
        output_concat = transpose_output(output, self.num_heads)
        return self.out_proj(output_concat)
