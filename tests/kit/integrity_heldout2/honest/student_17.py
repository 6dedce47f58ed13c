"""Attention exercise.

I wrote MultiHeadAttention with an explicit loop over the heads first, because
that is how I understand it: each head owns a slice of the projected features.
"""
import math
from typing import List, Tuple

import torch
from torch import Tensor, nn


def init_qkv_weights(d_in: int, d_out: int) -> Tuple[Tensor, Tensor, Tensor]:
    query_weight_matrix = torch.rand(d_in, d_out)
    key_weight_matrix = torch.rand(d_in, d_out)
    value_weight_matrix = torch.rand(d_in, d_out)
    return query_weight_matrix, key_weight_matrix, value_weight_matrix


def project(x: Tensor, W_query: Tensor, W_key: Tensor, W_value: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    projected_queries = x @ W_query
    projected_keys = x @ W_key
    projected_values = x @ W_value
    return projected_queries, projected_keys, projected_values


def attention_scores(queries: Tensor, keys: Tensor) -> Tensor:
    keys_transposed = keys.transpose(-2, -1)
    return queries @ keys_transposed


def scaled_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    scaling_factor = math.sqrt(d_k)
    return torch.softmax(scores / scaling_factor, dim=-1)


def context_vectors(attn_weights: Tensor, values: Tensor) -> Tensor:
    return attn_weights @ values


def dot_product_variance(dim: int, num_trials: int = 1000, seed: int = 0) -> Tuple[float, float]:
    random_generator = torch.Generator().manual_seed(seed)
    all_query_vectors = torch.randn(num_trials, dim, generator=random_generator, dtype=torch.float64)
    all_key_vectors = torch.randn(num_trials, dim, generator=random_generator, dtype=torch.float64)
    dot_products: List[float] = [
        float(torch.dot(query_vector, key_vector))
        for query_vector, key_vector in zip(all_query_vectors, all_key_vectors)
    ]
    dot_products_tensor = torch.tensor(dot_products, dtype=torch.float64)
    scaled_dot_products = dot_products_tensor / math.sqrt(dim)
    variance_before_scaling = dot_products_tensor.var(unbiased=False).item()
    variance_after_scaling = scaled_dot_products.var(unbiased=False).item()
    return variance_before_scaling, variance_after_scaling


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: Tensor) -> Tensor:
        projected_queries, projected_keys, projected_values = project(x, self.W_query, self.W_key, self.W_value)
        unnormalized_scores = attention_scores(projected_queries, projected_keys)
        normalized_weights = scaled_attention_weights(unnormalized_scores, projected_keys.shape[-1])
        return context_vectors(normalized_weights, projected_values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: Tensor) -> Tensor:
        projected_queries = self.W_query(x)
        projected_keys = self.W_key(x)
        projected_values = self.W_value(x)
        unnormalized_scores = attention_scores(projected_queries, projected_keys)
        normalized_weights = scaled_attention_weights(unnormalized_scores, projected_keys.shape[-1])
        return context_vectors(normalized_weights, projected_values)


def causal_mask(context_length: int) -> Tensor:
    row_positions = torch.arange(context_length).unsqueeze(1)
    column_positions = torch.arange(context_length).unsqueeze(0)
    return column_positions > row_positions


def mask_and_renormalize(attn_weights: Tensor) -> Tensor:
    sequence_length = attn_weights.shape[-1]
    future_positions = causal_mask(sequence_length).to(attn_weights.device)
    weights_without_future = attn_weights.masked_fill(future_positions, 0.0)
    row_totals = weights_without_future.sum(dim=-1, keepdim=True)
    return weights_without_future / row_totals


def causal_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    sequence_length = scores.shape[-1]
    future_positions = causal_mask(sequence_length).to(scores.device)
    masked_scores = scores.masked_fill(future_positions, float("-inf"))
    return scaled_attention_weights(masked_scores, d_k)


def attention_dropout(attn_weights: Tensor, p: float, training: bool = True) -> Tensor:
    if not training:
        return attn_weights
    if p >= 1.0:
        return torch.zeros_like(attn_weights)
    survivor_mask = torch.rand_like(attn_weights) >= p
    rescaling_factor = 1.0 / (1.0 - p)
    return attn_weights * survivor_mask * rescaling_factor


class CausalAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False) -> None:
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: Tensor) -> Tensor:
        number_of_tokens = x.shape[1]
        projected_queries = self.W_query(x)
        projected_keys = self.W_key(x)
        projected_values = self.W_value(x)
        unnormalized_scores = attention_scores(projected_queries, projected_keys)
        future_positions = self.mask[:number_of_tokens, :number_of_tokens]
        masked_scores = unnormalized_scores.masked_fill(future_positions, float("-inf"))
        normalized_weights = scaled_attention_weights(masked_scores, projected_keys.shape[-1])
        normalized_weights = self.dropout(normalized_weights)
        return context_vectors(normalized_weights, projected_values)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,
                 qkv_bias: bool = False) -> None:
        super().__init__()
        list_of_heads = []
        for _ in range(num_heads):
            list_of_heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.heads = nn.ModuleList(list_of_heads)

    def forward(self, x: Tensor) -> Tensor:
        outputs_of_each_head = []
        for single_head in self.heads:
            outputs_of_each_head.append(single_head(x))
        return torch.cat(outputs_of_each_head, dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,
                 qkv_bias: bool = False) -> None:
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x: Tensor) -> Tensor:
        number_of_tokens = x.shape[1]
        all_queries = self.W_query(x)
        all_keys = self.W_key(x)
        all_values = self.W_value(x)
        future_positions = self.mask[:number_of_tokens, :number_of_tokens]

        per_head_outputs = []
        for head_index in range(self.num_heads):
            first_feature = head_index * self.head_dim
            last_feature = first_feature + self.head_dim
            head_queries = all_queries[:, :, first_feature:last_feature]
            head_keys = all_keys[:, :, first_feature:last_feature]
            head_values = all_values[:, :, first_feature:last_feature]

            head_scores = attention_scores(head_queries, head_keys)
            head_scores = head_scores.masked_fill(future_positions, float("-inf"))
            head_weights = scaled_attention_weights(head_scores, self.head_dim)
            head_weights = self.dropout(head_weights)
            per_head_outputs.append(context_vectors(head_weights, head_values))

        concatenated_heads = torch.cat(per_head_outputs, dim=-1)
        return self.out_proj(concatenated_heads)
