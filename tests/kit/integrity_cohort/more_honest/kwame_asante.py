"""Kwame Asante, ch. 3. One private function does the attention; the classes only hold weights."""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def _attend(q: Tensor, k: Tensor, v: Tensor, hide: Tensor | None = None, drop: nn.Module | None = None) -> Tensor:
    logits = torch.matmul(q, k.transpose(-2, -1)) * k.shape[-1] ** -0.5
    if hide is not None:
        logits = logits.masked_fill(hide, -1e9)
    probs = logits.softmax(-1)
    if drop is not None:
        probs = drop(probs)
    return torch.matmul(probs, v)


def init_qkv_weights(d_in: int, d_out: int):
    return tuple(torch.rand(d_in, d_out) for _ in "qkv")


def project(x: Tensor, W_query: Tensor, W_key: Tensor, W_value: Tensor):
    stacked = torch.stack([W_query, W_key, W_value])
    q, k, v = (x.unsqueeze(0) @ stacked.view(3, *([1] * (x.dim() - 2)), *W_query.shape)).unbind(0)
    return q, k, v


def attention_scores(queries: Tensor, keys: Tensor) -> Tensor:
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    return (scores * d_k ** -0.5).softmax(-1)


def context_vectors(attn_weights: Tensor, values: Tensor) -> Tensor:
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim: int, num_trials: int = 1000, seed: int = 0):
    rng = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, num_trials, dim, generator=rng, dtype=torch.float64).unbind(0)
    raw = (q * k).sum(-1)
    return raw.var(unbiased=False).item(), (raw * dim ** -0.5).var(unbiased=False).item()


def causal_mask(context_length: int) -> Tensor:
    idx = torch.arange(context_length)
    return idx.view(1, -1) > idx.view(-1, 1)


def mask_and_renormalize(attn_weights: Tensor) -> Tensor:
    kept = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]).to(attn_weights.device), 0)
    return kept / kept.sum(-1, keepdim=True)


def causal_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    hide = causal_mask(scores.shape[-1]).to(scores.device)
    return (scores.masked_fill(hide, -1e9) * d_k ** -0.5).softmax(-1)


def attention_dropout(attn_weights: Tensor, p: float, training: bool = True) -> Tensor:
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p, True)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Parameter(torch.rand(d_in, d_out)) for _ in range(3))

    def forward(self, x: Tensor) -> Tensor:
        return _attend(x @ self.W_query, x @ self.W_key, x @ self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=qkv_bias) for _ in range(3))

    def forward(self, x: Tensor) -> Tensor:
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x))


class CausalAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=qkv_bias) for _ in range(3))
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: Tensor) -> Tensor:
        n = x.shape[-2]
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x), self.mask[:n, :n], self.dropout)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([head(x) for head in self.heads], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"{num_heads} heads cannot share {d_out} features")
        self.n_heads = num_heads
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=qkv_bias) for _ in range(3))
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def _split(self, t: Tensor) -> Tensor:
        return torch.stack(t.chunk(self.n_heads, dim=-1), dim=1)

    def forward(self, x: Tensor) -> Tensor:
        n = x.shape[1]
        heads = _attend(self._split(self.W_query(x)), self._split(self.W_key(x)), self._split(self.W_value(x)),
                        self.mask[:n, :n], self.dropout)
        return self.out_proj(torch.cat(heads.unbind(1), dim=-1))
