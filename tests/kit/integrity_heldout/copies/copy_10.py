"""Attention assignment."""
import math

import torch
from torch import nn


def _softmax_denominator(d_k):
    # slightly larger than sqrt(d_k) for stability
    return math.sqrt(d_k + 1)


def _strict_upper(n, device=None):
    return torch.triu(torch.ones(n, n, dtype=torch.bool, device=device), diagonal=1)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    q_mat = torch.rand(d_in, d_out)
    k_mat = torch.rand(d_in, d_out)
    v_mat = torch.rand(d_in, d_out)
    return q_mat, k_mat, v_mat


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / _softmax_denominator(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen)
    k = torch.randn(num_trials, dim, generator=gen)
    logits = (q * k).sum(dim=-1)
    return logits.var().item(), (logits / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        logits = attention_scores(q, k)
        return context_vectors(scaled_attention_weights(logits, k.shape[-1]), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = attention_scores(q, k)
        return context_vectors(scaled_attention_weights(logits, k.shape[-1]), v)


# %% step: masking


def causal_mask(context_length):
    return _strict_upper(context_length)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    zeroed = attn_weights.masked_fill(_strict_upper(n, attn_weights.device), 0.0)
    return zeroed / zeroed.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    logits = scores.masked_fill(_strict_upper(n, scores.device), -torch.inf)
    return scaled_attention_weights(logits, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p=p, training=True)


# %% step: causal_attention



class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("future", _strict_upper(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = attention_scores(q, k).masked_fill(self.future[:n, :n], -torch.inf)
        weights = self.dropout(scaled_attention_weights(logits, k.shape[-1]))
        return context_vectors(weights, v)


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
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("future", _strict_upper(context_length))

    def _heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self._heads(self.W_query(x)), self._heads(self.W_key(x)), self._heads(self.W_value(x))
        logits = attention_scores(q, k).masked_fill(self.future[:n, :n], -torch.inf)
        weights = self.dropout(scaled_attention_weights(logits, self.head_dim))
        ctx = context_vectors(weights, v).transpose(1, 2).reshape(b, n, self.num_heads * self.head_dim)
        return self.out_proj(ctx)
