"""Attention, step by step.

Where PyTorch already has the operation (F.scaled_dot_product_attention) I use it,
and check it against the step-by-step functions in my notebook.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def init_qkv_weights(d_in: int, d_out: int) -> tuple[Tensor, Tensor, Tensor]:
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x: Tensor, W_query: Tensor, W_key: Tensor, W_value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries: Tensor, keys: Tensor) -> Tensor:
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    return F.softmax(scores * (1 / math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights: Tensor, values: Tensor) -> Tensor:
    return attn_weights @ values


def dot_product_variance(dim: int, num_trials: int = 1000, seed: int = 0) -> tuple[float, float]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    d = torch.linalg.vecdot(q, k)
    return d.var(correction=0).item(), (d / math.sqrt(dim)).var(correction=0).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return F.scaled_dot_product_attention(q, k, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: Tensor) -> Tensor:
        return F.scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))


def causal_mask(context_length: int) -> Tensor:
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights: Tensor) -> Tensor:
    hidden = causal_mask(attn_weights.size(-1)).to(attn_weights.device)
    kept = attn_weights.masked_fill(hidden, 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    hidden = causal_mask(scores.size(-1)).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(hidden, float("-inf")), d_k)


def attention_dropout(attn_weights: Tensor, p: float, training: bool = True) -> Tensor:
    if not training:
        return attn_weights
    if p == 1.0:
        return torch.zeros_like(attn_weights)
    keep = torch.rand_like(attn_weights) >= p
    return attn_weights.masked_fill(~keep, 0.0) / (1.0 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # kept for the checks and for code that reads it; the fused kernel builds its own causal mask
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x: Tensor) -> Tensor:
        n = x.size(1)
        allowed = self.mask[:n, :n] == 0
        p = self.dropout.p if self.training else 0.0
        return F.scaled_dot_product_attention(
            self.W_query(x), self.W_key(x), self.W_value(x), attn_mask=allowed, dropout_p=p)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,
                 qkv_bias: bool = False) -> None:
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,
                 qkv_bias: bool = False) -> None:
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out, self.num_heads = d_out, num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x: Tensor) -> Tensor:
        b, n, _ = x.shape
        q, k, v = (
            proj(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
            for proj in (self.W_query, self.W_key, self.W_value)
        )
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=self.mask[:n, :n] == 0, dropout_p=self.dropout.p if self.training else 0.0)
        return self.out_proj(out.transpose(1, 2).flatten(2))
