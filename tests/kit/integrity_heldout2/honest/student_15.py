import math
from typing import Optional, Tuple

import torch
from torch import nn


def init_qkv_weights(d_in: int, d_out: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x: torch.Tensor, W_query: torch.Tensor, W_key: torch.Tensor, W_value: torch.Tensor):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores: torch.Tensor, d_k: int) -> torch.Tensor:
    attn_weights = scores / torch.full([], d_k ** 0.5, dtype=scores.dtype, device=scores.device)
    return nn.functional.softmax(attn_weights, dim=-1)


def context_vectors(attn_weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim: int, num_trials: int = 1000, seed: int = 0) -> Tuple[float, float]:
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)
    key = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)
    dots = torch.sum(query * key, dim=-1)
    return torch.var(dots, correction=0).item(), torch.var(dots / math.sqrt(dim), correction=0).item()


def _attn(query, key, value, causal_mask=None, attn_dropout=None):
    """Attention core, in the manner of Hugging Face's GPT2Attention._attn.

    `causal_mask` is True where a query may look at a key."""
    attn_weights = torch.matmul(query, key.transpose(-1, -2))
    attn_weights = attn_weights / torch.full(
        [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
    )
    if causal_mask is not None:
        # Need to be a tensor, otherwise we get error: `RuntimeError: expected scalar type float but found double`.
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    if attn_dropout is not None:
        attn_weights = attn_dropout(attn_weights)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output, attn_weights


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        query, key, value = project(x, self.W_query, self.W_key, self.W_value)
        attn_output, _ = _attn(query, key, value)
        return attn_output


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        attn_output, _ = _attn(self.W_query(x), self.W_key(x), self.W_value(x))
        return attn_output


def causal_mask(context_length: int) -> torch.Tensor:
    bias = torch.tril(torch.ones((context_length, context_length), dtype=torch.bool))
    return ~bias


def mask_and_renormalize(attn_weights: torch.Tensor) -> torch.Tensor:
    query_length = key_length = attn_weights.size(-1)
    bias = torch.tril(torch.ones((key_length, key_length), dtype=torch.bool, device=attn_weights.device))
    masked = torch.where(bias[key_length - query_length: key_length, :key_length], attn_weights,
                         torch.zeros_like(attn_weights))
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores: torch.Tensor, d_k: int) -> torch.Tensor:
    hidden = causal_mask(scores.size(-1)).to(scores.device)
    scores = scores.masked_fill(hidden, float("-inf"))
    return scaled_attention_weights(scores, d_k)


def attention_dropout(attn_weights: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    if not training:
        return attn_weights
    if p == 1.0:
        return torch.zeros_like(attn_weights)
    keep = torch.rand_like(attn_weights) >= p
    return attn_weights * keep / (1.0 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        query_length = key_length = hidden_states.size(-2)
        causal = self.mask[key_length - query_length: key_length, :key_length] == 0
        attn_output, _ = _attn(self.W_query(hidden_states), self.W_key(hidden_states),
                               self.W_value(hidden_states), causal, self.dropout)
        return attn_output


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return torch.cat([head(hidden_states) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.embed_dim = d_out
        self.num_heads = num_heads
        self.head_dim = self.embed_dim // self.num_heads
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(
                f"`embed_dim` must be divisible by num_heads (got `embed_dim`: {self.embed_dim} and `num_heads`:"
                f" {self.num_heads})."
            )
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def _split_heads(self, tensor, num_heads, attn_head_size):
        """Splits hidden_size dim into attn_head_size and num_heads"""
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        """Merges attn_head_size dim and num_attn_heads dim into hidden_size"""
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, hidden_states: torch.Tensor, layer_past: Optional[torch.Tensor] = None) -> torch.Tensor:
        query = self._split_heads(self.W_query(hidden_states), self.num_heads, self.head_dim)
        key = self._split_heads(self.W_key(hidden_states), self.num_heads, self.head_dim)
        value = self._split_heads(self.W_value(hidden_states), self.num_heads, self.head_dim)

        query_length, key_length = query.size(-2), key.size(-2)
        causal = self.mask[key_length - query_length: key_length, :key_length] == 0
        attn_output, _ = _attn(query, key, value, causal, self.dropout)

        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        return self.out_proj(attn_output)
