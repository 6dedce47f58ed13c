from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
from torch import Tensor, nn

QKV = Tuple[Tensor, Tensor, Tensor]


# %% step: projection


def init_qkv_weights(d_in: int, d_out: int) -> QKV:
    w_query: Tensor = torch.rand(d_in, d_out)
    w_key: Tensor = torch.rand(d_in, d_out)
    w_value: Tensor = torch.rand(d_in, d_out)
    return w_query, w_key, w_value


def project(x: Tensor, W_query: Tensor, W_key: Tensor, W_value: Tensor) -> QKV:
    queries: Tensor = torch.matmul(x, W_query)
    keys: Tensor = torch.matmul(x, W_key)
    values: Tensor = torch.matmul(x, W_value)
    return queries, keys, values


# %% step: scaling


def attention_scores(queries: Tensor, keys: Tensor) -> Tensor:
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights: Tensor, values: Tensor) -> Tensor:
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim: int, num_trials: int = 1000, seed: int = 0) -> Tuple[float, float]:
    gen: torch.Generator = torch.Generator().manual_seed(seed)
    q: Tensor = torch.randn(num_trials, dim, generator=gen)
    k: Tensor = torch.randn(num_trials, dim, generator=gen)
    dots: Tensor = torch.sum(q * k, dim=-1)
    before: float = torch.var(dots).item()
    after: float = torch.var(dots / math.sqrt(dim)).item()
    return before, after


class SelfAttention_v1(nn.Module):
    W_query: nn.Parameter
    W_key: nn.Parameter
    W_value: nn.Parameter

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: Tensor) -> Tensor:
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        weights: Tensor = scaled_attention_weights(attention_scores(queries, keys), keys.size(-1))
        return context_vectors(weights, values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.W_query: nn.Linear = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key: nn.Linear = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value: nn.Linear = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: Tensor) -> Tensor:
        queries: Tensor = self.W_query(x)
        keys: Tensor = self.W_key(x)
        values: Tensor = self.W_value(x)
        weights: Tensor = scaled_attention_weights(attention_scores(queries, keys), keys.size(-1))
        return context_vectors(weights, values)


# %% step: masking


def causal_mask(context_length: int) -> Tensor:
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights: Tensor) -> Tensor:
    hidden: Tensor = causal_mask(attn_weights.size(-1)).to(attn_weights.device)
    kept: Tensor = attn_weights.masked_fill(hidden, 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    hidden: Tensor = causal_mask(scores.size(-1)).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(hidden, float("-inf")), d_k)


# %% step: dropout


def attention_dropout(attn_weights: Tensor, p: float, training: bool = True) -> Tensor:
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p=p, training=True)


# %% step: causal_attention


class CausalAttention(nn.Module):
    mask: Tensor

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        self.W_query: nn.Linear = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key: nn.Linear = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value: nn.Linear = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout: nn.Dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: Tensor) -> Tensor:
        num_tokens: int = x.size(1)
        queries: Tensor = self.W_query(x)
        keys: Tensor = self.W_key(x)
        values: Tensor = self.W_value(x)
        scores: Tensor = attention_scores(queries, keys)
        scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens], float("-inf"))
        weights: Tensor = self.dropout(scaled_attention_weights(scores, keys.size(-1)))
        return context_vectors(weights, values)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        self.heads: nn.ModuleList = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x: Tensor) -> Tensor:
        outputs: list[Tensor] = [head(x) for head in self.heads]
        return torch.cat(outputs, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    mask: Tensor

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ) -> None:
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
        self.d_out: int = d_out
        self.num_heads: int = num_heads
        self.head_dim: int = d_out // num_heads
        self.W_query: nn.Linear = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key: nn.Linear = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value: nn.Linear = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj: nn.Linear = nn.Linear(d_out, d_out)
        self.dropout: nn.Dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def _to_heads(self, t: Tensor) -> Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def _from_heads(self, t: Tensor) -> Tensor:
        b, _, n, _ = t.shape
        return t.transpose(1, 2).contiguous().view(b, n, self.d_out)

    def forward(self, x: Tensor, attn_mask: Optional[Tensor] = None) -> Tensor:
        num_tokens: int = x.size(1)
        queries: Tensor = self._to_heads(self.W_query(x))
        keys: Tensor = self._to_heads(self.W_key(x))
        values: Tensor = self._to_heads(self.W_value(x))
        hidden: Tensor = self.mask[:num_tokens, :num_tokens] if attn_mask is None else attn_mask
        scores: Tensor = attention_scores(queries, keys).masked_fill(hidden, float("-inf"))
        weights: Tensor = self.dropout(scaled_attention_weights(scores, self.head_dim))
        return self.out_proj(self._from_heads(context_vectors(weights, values)))
