"""Attention chapter exercises.

I wrote most of the tensor contractions with einsum because I find the index
notation easier to read than chains of transposes.  -- Priya
"""

import math
from typing import Tuple

import torch
from torch import nn

Tensor = torch.Tensor

# %% step: projection


def init_qkv_weights(d_in: int, d_out: int) -> Tuple[Tensor, Tensor, Tensor]:
    # order matters for reproducibility: Q, then K, then V
    w_q = torch.rand(d_in, d_out)
    w_k = torch.rand(d_in, d_out)
    w_v = torch.rand(d_in, d_out)
    return w_q, w_k, w_v


def project(x: Tensor, W_query: Tensor, W_key: Tensor, W_value: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    q = torch.einsum("...ni,io->...no", x, W_query)
    k = torch.einsum("...ni,io->...no", x, W_key)
    v = torch.einsum("...ni,io->...no", x, W_value)
    return q, k, v


# %% step: scaling


def attention_scores(queries: Tensor, keys: Tensor) -> Tensor:
    # s[i, j] = <q_i, k_j>
    return torch.einsum("...id,...jd->...ij", queries, keys)


def scaled_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


def context_vectors(attn_weights: Tensor, values: Tensor) -> Tensor:
    # z_i = sum_j a_ij v_j
    return torch.einsum("...ij,...jd->...id", attn_weights, values)


def dot_product_variance(dim: int, num_trials: int = 1000, seed: int = 0) -> Tuple[float, float]:
    rng = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=rng)
    k = torch.randn(num_trials, dim, generator=rng)
    raw = torch.einsum("td,td->t", q, k)
    # expected: var(raw) ~ dim, var(raw/sqrt(dim)) ~ 1
    return raw.var().item(), (raw / math.sqrt(dim)).var().item()


def _attend(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Plain (unmasked) scaled dot-product attention."""
    w = scaled_attention_weights(attention_scores(q, k), q.shape[-1])
    return context_vectors(w, v)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return _attend(q, k, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: Tensor) -> Tensor:
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: masking


def causal_mask(context_length: int) -> Tensor:
    # lower triangle (incl. diagonal) is visible, so hidden = NOT tril
    visible = torch.tril(torch.ones(context_length, context_length, dtype=torch.bool))
    return ~visible


def mask_and_renormalize(attn_weights: Tensor) -> Tensor:
    n = attn_weights.shape[-1]
    hidden = causal_mask(n).to(attn_weights.device)
    kept = attn_weights.masked_fill(hidden, 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    n = scores.shape[-1]
    hidden = causal_mask(n).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(hidden, -math.inf), d_k)


# %% step: dropout


def attention_dropout(attn_weights: Tensor, p: float, training: bool = True) -> Tensor:
    if not training or p == 0.0:
        return attn_weights
    if p == 1.0:
        return torch.zeros_like(attn_weights)
    keep = (torch.rand_like(attn_weights) >= p).to(attn_weights.dtype)
    return attn_weights * keep / (1.0 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: Tensor) -> Tensor:
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.einsum("bid,bjd->bij", q, k)
        s = s.masked_fill(self.mask[:n, :n], -math.inf)
        a = self.dropout(torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1))
        return torch.einsum("bij,bjd->bid", a, v)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int, qkv_bias: bool = False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)
        )

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int, qkv_bias: bool = False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out={d_out} not divisible by num_heads={num_heads}")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def _split(self, t: Tensor) -> Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim)  # b n h d

    def forward(self, x: Tensor) -> Tensor:
        b, n, _ = x.shape
        q = self._split(self.W_query(x))
        k = self._split(self.W_key(x))
        v = self._split(self.W_value(x))
        s = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(self.head_dim)
        s = s.masked_fill(self.mask[:n, :n], -math.inf)
        a = self.dropout(s.softmax(dim=-1))
        z = torch.einsum("bhij,bjhd->bihd", a, v).reshape(b, n, self.d_out)
        return self.out_proj(z)
