"""Attention mechanisms, step by step: your working copy.

Fill in every function or method that raises NotImplementedError. Keep the
names and signatures exactly: the autograder calls them by name.
Check one step with `python check.py projection` (see README.md).
This file was generated from the course's solutions; your edits are yours.
"""

import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    """Draw the query, key and value weight matrices, in that order."""
    W_query = torch.rand(d_in, d_out, requires_grad=False)
    W_key = torch.rand(d_in, d_out, requires_grad=False)
    W_value = torch.rand(d_in, d_out, requires_grad=False)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    """Project inputs to queries, keys and values."""
    queries = x @ W_query
    keys = x @ W_key
    values = x @ W_value
    return queries, keys, values


# %% step: scaling


def attention_scores(queries, keys):
    """Unnormalised attention scores."""
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    """Softmax of scores / sqrt(d_k)."""
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    """Weighted sum of the values."""
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Variance of q.k before and after the scaling."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn((num_trials, dim), generator=g)
    k = torch.randn((num_trials, dim), generator=g)
    dot = (q * k).sum(dim=-1)
    scaled = dot / math.sqrt(dim)
    return dot.var().item(), scaled.var().item()


class SelfAttention_v1(nn.Module):
    """Self-attention with raw parameters."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        d_k = keys.shape[-1]
        attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)
        context_vec = attn_weights @ values
        return context_vec


class SelfAttention_v2(nn.Module):
    """Self-attention with nn.Linear."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        d_k = keys.shape[-1]
        attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)
        context_vec = attn_weights @ values
        return context_vec


# %% step: masking


def causal_mask(context_length):
    """True above the diagonal."""
    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    return mask == 1


def mask_and_renormalize(attn_weights):
    """Zero the future, renormalise rows."""
    context_length = attn_weights.shape[-1]
    mask_simple = torch.tril(torch.ones(context_length, context_length))
    masked_simple = attn_weights * mask_simple
    row_sums = masked_simple.sum(dim=-1, keepdim=True)
    return masked_simple / row_sums


def causal_attention_weights(scores, d_k):
    """-inf on the future, then scaled softmax."""
    context_length = scores.shape[-1]
    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    masked = scores.masked_fill(mask == 1, float('-inf'))
    return torch.softmax(masked / d_k**0.5, dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout like nn.Dropout."""
    layer = torch.nn.Dropout(p)
    layer.training = training
    return layer(attn_weights)


# %% step: causal_attention


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            'mask', torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(
            self.mask[:num_tokens, :num_tokens] == 1, float('-inf')
        )
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = attn_weights @ values
        return context_vec


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """Several CausalAttention heads, concatenated."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
             for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention with weight splits."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            'mask', torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape

        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask[:num_tokens, :num_tokens] == 1
        attn_scores = attn_scores.masked_fill(mask_bool, float('-inf'))

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec
