# coding=utf-8
# Attention exercise. Structure borrowed from transformers' modeling_gpt2.py
import math

import torch
from torch import nn


# %% step: projection


def init_qkv_weights(d_in, d_out):
    weights = []
    for _name in ("query", "key", "value"):
        weights.append(torch.rand(d_in, d_out))
    return tuple(weights)


def project(x, W_query, W_key, W_value):
    fused = torch.cat([W_query, W_key, W_value], dim=1)
    query, key, value = (x @ fused).split(W_query.shape[1], dim=-1)
    return query, key, value


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    scores = scores / torch.full([], d_k ** 0.5, dtype=scores.dtype, device=scores.device)
    return nn.functional.softmax(scores, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    generator = torch.Generator().manual_seed(seed)
    qk = torch.randn(2, num_trials, dim, generator=generator)
    dots = (qk[0] * qk[1]).sum(dim=-1)
    scaled = dots / math.sqrt(dim)
    return dots.var(unbiased=False).item(), scaled.var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.split_size = d_out

    def forward(self, x):
        query, key, value = project(x, self.W_query, self.W_key, self.W_value)
        attn_weights = scaled_attention_weights(attention_scores(query, key), self.split_size)
        return context_vectors(attn_weights, value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.split_size = d_out

    def forward(self, x):
        query = self.W_query(x)
        key = self.W_key(x)
        value = self.W_value(x)
        attn_weights = scaled_attention_weights(attention_scores(query, key), self.split_size)
        return context_vectors(attn_weights, value)


# %% step: masking


def causal_mask(context_length):
    bias = torch.tril(torch.ones((context_length, context_length), dtype=torch.bool))
    return ~bias


def mask_and_renormalize(attn_weights):
    n = attn_weights.size(-1)
    bias = torch.tril(torch.ones((n, n), dtype=torch.bool, device=attn_weights.device))
    attn_weights = torch.where(bias, attn_weights, torch.zeros_like(attn_weights))
    return attn_weights / attn_weights.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.size(-1)
    bias = torch.tril(torch.ones((n, n), dtype=torch.bool, device=scores.device))
    mask_value = torch.full([], float("-inf"), dtype=scores.dtype, device=scores.device)
    scores = torch.where(bias, scores, mask_value)
    return scaled_attention_weights(scores, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        max_positions = context_length
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)),
            persistent=False,
        )
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attn_dropout = nn.Dropout(dropout)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full(
            [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
        )
        query_length, key_length = query.size(-2), key.size(-2)
        causal = self.bias[key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal, attn_weights, mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = self.attn_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value)
        return attn_output, attn_weights

    def forward(self, x):
        query = self.W_query(x)
        key = self.W_key(x)
        value = self.W_value(x)
        attn_output, _ = self._attn(query, key, value)
        return attn_output


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.h = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([block(x) for block in self.h], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.embed_dim = d_out
        self.num_heads = num_heads
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(
                f"`embed_dim` must be divisible by num_heads (got `embed_dim`: {self.embed_dim} and `num_heads`:"
                f" {self.num_heads})."
            )
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((context_length, context_length), dtype=torch.bool)).view(
                1, 1, context_length, context_length
            ),
            persistent=False,
        )
        self.c_attn = nn.Linear(d_in, 3 * self.embed_dim, bias=qkv_bias)
        self.c_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(dropout)

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

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full(
            [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
        )
        query_length, key_length = query.size(-2), key.size(-2)
        causal = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.full([], torch.finfo(attn_weights.dtype).min,
                                dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal, attn_weights, mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value), attn_weights

    def forward(self, x):
        query, key, value = self.c_attn(x).split(self.split_size, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        attn_output, _ = self._attn(query, key, value)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        return self.c_proj(attn_output)
