"""Zane Brooks -- chapter 3.

Heads are split and merged with helper methods, the way Hugging Face's GPT-2
code does it (split_heads / merge_heads)."""

import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    query_matrix = torch.rand(d_in, d_out)
    key_matrix = torch.rand(d_in, d_out)
    value_matrix = torch.rand(d_in, d_out)
    return query_matrix, key_matrix, value_matrix


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-1, -2)


def scaled_attention_weights(scores, d_k):
    return nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator().manual_seed(seed)
    left = torch.randn(num_trials, dim, generator=rng)
    right = torch.randn(num_trials, dim, generator=rng)
    prod = (left * right).sum(dim=-1)
    return float(prod.var()), float((prod / math.sqrt(dim)).var())


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        query, key, value = project(x, self.W_query, self.W_key, self.W_value)
        probs = scaled_attention_weights(attention_scores(query, key), key.size(-1))
        return context_vectors(probs, value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        probs = scaled_attention_weights(attention_scores(self.W_query(x), self.W_key(x)),
                                         self.W_key.out_features)
        return context_vectors(probs, self.W_value(x))


def causal_mask(context_length):
    visible = torch.tril(torch.ones(context_length, context_length, dtype=torch.bool))
    return visible.logical_not()


def mask_and_renormalize(attn_weights):
    probs = attn_weights.masked_fill(causal_mask(attn_weights.size(-1)).to(attn_weights.device), 0.0)
    return probs / probs.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    lowest = torch.finfo(scores.dtype).min
    masked = scores.masked_fill(causal_mask(scores.size(-1)).to(scores.device), lowest)
    return nn.functional.softmax(masked / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    gate = torch.rand_like(attn_weights) >= p
    return attn_weights * gate / (1 - p) if p < 1 else torch.zeros_like(attn_weights)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def attend(self, query, key, value):
        n = query.size(-2)
        scores = attention_scores(query, key) / math.sqrt(key.size(-1))
        scores = scores.masked_fill(self.mask[:n, :n], torch.finfo(scores.dtype).min)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        return probs @ value

    def forward(self, x):
        return self.attend(self.W_query(x), self.W_key(x), self.W_value(x))


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_size = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.num_heads, self.head_size)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.num_heads * self.head_size,))

    def forward(self, x):
        query = self.split_heads(self.W_query(x))
        key = self.split_heads(self.W_key(x))
        value = self.split_heads(self.W_value(x))
        n = query.size(-2)
        scores = attention_scores(query, key) / math.sqrt(self.head_size)
        scores = scores.masked_fill(self.mask[:n, :n], torch.finfo(scores.dtype).min)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        return self.merge_heads(probs @ value)
