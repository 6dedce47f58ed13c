"""Attention exercises (chapter 3) - Zoe Anderson"""

import math

import torch
from torch import nn


# %% step: projection


def project(x, W_query, W_key, W_value):
    queries = x @ W_query
    keys = x @ W_key
    values = x @ W_value
    return queries, keys, values


def init_qkv_weights(d_in, d_out):
    weights = {}
    for role in ["query", "key", "value"]:
        weights[role] = torch.rand(d_in, d_out)
    return weights["query"], weights["key"], weights["value"]


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def dot_product_variance(dim, num_trials=1000, seed=0):
    generator = torch.Generator().manual_seed(seed)
    queries = torch.randn(num_trials, dim, generator=generator)
    keys = torch.randn(num_trials, dim, generator=generator)
    products = torch.sum(queries * keys, dim=-1)
    before, _ = torch.var_mean(products)
    after, _ = torch.var_mean(products / math.sqrt(dim))
    return before.item(), after.item()


def _masked_attention(queries, keys, values, hidden=None, drop=None):
    """Scaled dot-product attention used by every class below."""
    scores = queries @ keys.transpose(-2, -1)
    scores = scores / math.sqrt(queries.shape[-1])
    if hidden is not None:
        scores = scores.masked_fill(hidden, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if drop is not None:
        weights = drop(weights)
    return weights @ values


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        return _masked_attention(queries, keys, values)


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        return _masked_attention(queries, keys, values)


# %% step: masking


def causal_mask(context_length):
    upper = torch.ones(context_length, context_length).triu(1)
    return upper > 0


def causal_attention_weights(scores, d_k):
    seq_len = scores.shape[-1]
    hidden = causal_mask(seq_len).to(scores.device)
    scores = scores.masked_fill(hidden, float("-inf"))
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def mask_and_renormalize(attn_weights):
    seq_len = attn_weights.shape[-1]
    lower = attn_weights.new_ones(seq_len, seq_len).tril()
    kept = attn_weights * lower
    return kept / kept.sum(-1, keepdim=True)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        seq_len = x.shape[1]
        limit = self.mask.shape[0]
        if seq_len > limit:
            raise ValueError(f"sequence of length {seq_len} exceeds context_length {limit}")
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        return _masked_attention(
            queries, keys, values,
            hidden=self.mask[:seq_len, :seq_len],
            drop=self.dropout,
        )


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        ])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "num_heads should divide d_out"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        batch, seq_len, _ = x.shape
        limit = self.mask.shape[0]
        if seq_len > limit:
            raise ValueError(f"sequence of length {seq_len} exceeds context_length {limit}")
        queries = self._to_heads(self.W_query(x))
        keys = self._to_heads(self.W_key(x))
        values = self._to_heads(self.W_value(x))
        context = _masked_attention(
            queries, keys, values,
            hidden=self.mask[:seq_len, :seq_len],
            drop=self.dropout,
        )
        context = context.transpose(1, 2).reshape(batch, seq_len, -1)
        return self.out_proj(context)

    def _to_heads(self, t):
        batch, seq_len, _ = t.shape
        t = t.view(batch, seq_len, self.num_heads, self.head_dim)
        return t.transpose(1, 2)
