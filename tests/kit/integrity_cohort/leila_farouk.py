# Leila Farouk
# Chapter 3: attention. Helpers first, then the steps in order.

import math
import torch
from torch import nn
from torch.nn import functional as F


def hidden_positions(size, device=None):
    """Which (query, key) pairs are not allowed."""
    block = torch.ones((size, size), dtype=torch.bool, device=device)
    return torch.triu(block)


def heads_first(T, n_heads):
    bs, length, width = T.shape
    T = T.reshape(bs, length, n_heads, width // n_heads)
    return T.permute(0, 2, 1, 3)


def heads_back(T):
    bs, n_heads, length, size = T.shape
    return T.permute(0, 2, 1, 3).reshape(bs, length, n_heads * size)


def init_qkv_weights(d_in, d_out):
    Wq = torch.rand((d_in, d_out))
    Wk = torch.rand((d_in, d_out))
    Wv = torch.rand((d_in, d_out))
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def causal_mask(context_length):
    return hidden_positions(context_length)


def causal_attention_weights(scores, d_k):
    blocked = hidden_positions(scores.shape[-1], scores.device)
    return F.softmax(scores.masked_fill(blocked, -float("inf")) / math.sqrt(d_k), dim=-1)


def mask_and_renormalize(attn_weights):
    blocked = hidden_positions(attn_weights.shape[-1], attn_weights.device)
    A = attn_weights.masked_fill(blocked, 0.0)
    return A / A.sum(dim=-1, keepdim=True)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator().manual_seed(seed)
    A = torch.randn((num_trials, dim), generator=rng, dtype=torch.float64)
    B = torch.randn((num_trials, dim), generator=rng, dtype=torch.float64)
    dots = torch.sum(A * B, dim=1)
    return torch.var(dots).item(), torch.var(dots / math.sqrt(dim)).item()


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return F.dropout(attn_weights, p=p, training=True)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand((d_in, d_out)))
        self.W_key = nn.Parameter(torch.rand((d_in, d_out)))
        self.W_value = nn.Parameter(torch.rand((d_in, d_out)))

    def forward(self, x):
        q_, k_, v_ = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q_, k_), q_.shape[-1]), v_)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q_, k_, v_ = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q_, k_), q_.shape[-1]), v_)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("num_heads must divide d_out")
        self.n_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        length = x.shape[1]
        q_ = heads_first(self.W_query(x), self.n_heads)
        k_ = heads_first(self.W_key(x), self.n_heads)
        v_ = heads_first(self.W_value(x), self.n_heads)
        S = attention_scores(q_, k_).masked_fill(self.mask.bool()[:length, :length], -float("inf"))
        A = self.dropout(scaled_attention_weights(S, k_.shape[-1]))
        return self.out_proj(heads_back(A @ v_))


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        length = x.shape[1]
        q_, k_, v_ = self.W_query(x), self.W_key(x), self.W_value(x)
        S = attention_scores(q_, k_).masked_fill(self.mask.bool()[:length, :length], -float("inf"))
        return self.dropout(scaled_attention_weights(S, k_.shape[-1])) @ v_


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([module(x) for module in self.heads], dim=-1)
