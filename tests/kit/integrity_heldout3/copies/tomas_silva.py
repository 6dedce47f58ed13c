"""Attention mechanisms, step by step.

Tomas Silva -- chapter 3 exercises.
"""

import math

import torch
from torch import nn

MINUS_INFINITY = float("-inf")


# %% step: projection


def init_qkv_weights(d_in, d_out):
    w_q = torch.rand(d_in, d_out)
    w_k = torch.rand(d_in, d_out)
    w_v = torch.rand(d_in, d_out)
    return w_q, w_k, w_v


def project(x, W_query, W_key, W_value):
    qry = x @ W_query
    key = x @ W_key
    val = x @ W_value
    return qry, key, val


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    generator = torch.Generator().manual_seed(seed)
    qry = torch.randn(num_trials, dim, generator=generator)
    key = torch.randn(num_trials, dim, generator=generator)
    raw = (qry * key).sum(dim=-1)
    scaled = raw / math.sqrt(dim)
    return raw.var().item(), scaled.var().item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        qry, key, val = project(x, self.W_query, self.W_key, self.W_value)
        weights = scaled_attention_weights(attention_scores(qry, key), key.shape[-1])
        return context_vectors(weights, val)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        qry, key, val = self.W_query(x), self.W_key(x), self.W_value(x)
        weights = scaled_attention_weights(attention_scores(qry, key), key.shape[-1])
        return context_vectors(weights, val)


# %% step: masking


def _mask_upper(scores, n):
    # -inf on every entry above the diagonal
    upper = torch.triu(torch.ones(n, n, device=scores.device), diagonal=1).bool()
    return scores.masked_fill(upper, MINUS_INFINITY)


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    weights = attn_weights * torch.tril(torch.ones(n, n, device=attn_weights.device))
    return weights / (weights.sum(dim=-1, keepdim=True) + 1e-9)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(_mask_upper(scores, scores.shape[-1]), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if training:
        kept = (torch.rand_like(attn_weights) > p).float()
        return attn_weights * kept / (1.0 - p)
    return attn_weights


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1),
        )

    def forward(self, x):
        batch, tokens, _ = x.shape
        qry = self.W_query(x)
        key = self.W_key(x)
        val = self.W_value(x)
        scores = qry @ key.transpose(1, 2)
        scores = scores.masked_fill(self.mask.bool()[:tokens, :tokens], MINUS_INFINITY)
        weights = self.dropout(torch.softmax(scores / math.sqrt(key.shape[-1]), dim=-1))
        return weights @ val


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be a multiple of num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1),
        )

    def forward(self, x):
        batch, tokens, _ = x.shape
        qry = self.W_query(x).view(batch, tokens, self.num_heads, self.head_dim).transpose(1, 2)
        key = self.W_key(x).view(batch, tokens, self.num_heads, self.head_dim).transpose(1, 2)
        val = self.W_value(x).view(batch, tokens, self.num_heads, self.head_dim).transpose(1, 2)

        scores = qry @ key.transpose(-2, -1)
        scores = scores.masked_fill(self.mask.bool()[:tokens, :tokens], MINUS_INFINITY)
        weights = torch.softmax(scores / math.sqrt(self.head_dim), dim=-1)
        weights = self.dropout(weights)

        out = (weights @ val).reshape(batch, tokens, self.d_out)
        return self.out_proj(out)
