# Yara Saleh
# Multi-head attention organised like Hugging Face's GPT-2 attention:
# _split_heads / _merge_heads / _attn, and torch.where with the dtype's minimum
# instead of -inf.

import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    attn_weights = scores / torch.full([], d_k ** 0.5, dtype=scores.dtype, device=scores.device)
    return nn.functional.softmax(attn_weights, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    w = (q * k).sum(-1)
    return w.var().item(), (w / dim ** 0.5).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        query, key, value = project(x, self.W_query, self.W_key, self.W_value)
        attn_weights = scaled_attention_weights(attention_scores(query, key), value.size(-1))
        return context_vectors(attn_weights, value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        query, key, value = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_weights = scaled_attention_weights(attention_scores(query, key), value.size(-1))
        return context_vectors(attn_weights, value)


def causal_mask(context_length):
    bias = torch.tril(torch.ones((context_length, context_length), dtype=torch.bool))
    return ~bias


def mask_and_renormalize(attn_weights):
    n = attn_weights.size(-1)
    bias = torch.tril(torch.ones((n, n), dtype=torch.bool, device=attn_weights.device))
    attn_weights = torch.where(bias, attn_weights, torch.zeros_like(attn_weights))
    return attn_weights / attn_weights.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.size(-1)
    bias = torch.tril(torch.ones((n, n), dtype=torch.bool, device=scores.device))
    mask_value = torch.finfo(scores.dtype).min
    attn_weights = torch.where(bias, scores / d_k ** 0.5, torch.full_like(scores, mask_value))
    return nn.functional.softmax(attn_weights, dim=-1)


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.tril(torch.ones((context_length, context_length), dtype=torch.bool)),
            persistent=False)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal = self.mask[key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        attn_weights = torch.where(causal, attn_weights, torch.full_like(attn_weights, mask_value))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return torch.matmul(attn_weights, value), attn_weights

    def forward(self, x):
        attn_output, _ = self._attn(self.W_query(x), self.W_key(x), self.W_value(x))
        return attn_output


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        if d_out % num_heads != 0:
            raise ValueError(f"d_out must be divisible by num_heads (got d_out: {d_out} and num_heads: {num_heads}).")
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.out_proj = nn.Linear(d_out, d_out)

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, x):
        query = self._split_heads(self.W_query(x), self.num_heads, self.head_dim)
        key = self._split_heads(self.W_key(x), self.num_heads, self.head_dim)
        value = self._split_heads(self.W_value(x), self.num_heads, self.head_dim)
        attn_output, _ = self._attn(query, key, value)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        return self.out_proj(attn_output)
