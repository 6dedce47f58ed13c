"""Xavier Dubois. Attention written from the reference implementation that the
PyTorch documentation gives for scaled_dot_product_attention (an additive
attn_bias that holds -inf where a position is masked)."""

import math

import torch
from torch import nn


def build_attn_bias(L, S, dtype=torch.float32, device=None):
    attn_bias = torch.zeros(L, S, dtype=dtype, device=device)
    temp_mask = torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=0)
    attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
    return attn_bias


def sdpa(query, key, value, causal=False, dropout=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1))
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    if causal:
        attn_weight = attn_weight + build_attn_bias(L, S, query.dtype, query.device)
    attn_weight = torch.softmax(attn_weight, dim=-1)
    if dropout is not None:
        attn_weight = dropout(attn_weight)
    return attn_weight @ value


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores * (1 / math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    raw = (q * k).sum(dim=-1)
    scale_factor = 1 / math.sqrt(dim)
    return raw.var().item(), (raw * scale_factor).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return sdpa(x @ self.W_query, x @ self.W_key, x @ self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return sdpa(self.W_query(x), self.W_key(x), self.W_value(x))


def causal_mask(context_length):
    return torch.ones(context_length, context_length, dtype=torch.bool).tril(diagonal=0).logical_not()


def mask_and_renormalize(attn_weights):
    L, S = attn_weights.shape[-2:]
    keep = torch.ones(L, S, dtype=torch.bool, device=attn_weights.device).tril(diagonal=0)
    w = attn_weights * keep
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    L, S = scores.shape[-2:]
    attn_weight = scores * (1 / math.sqrt(d_k)) + build_attn_bias(L, S, scores.dtype, scores.device)
    return torch.softmax(attn_weight, dim=-1)


def attention_dropout(attn_weights, p, training=True):
    return torch.dropout(attn_weights, p, train=training)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        return sdpa(self.W_query(x), self.W_key(x), self.W_value(x), causal=True, dropout=self.dropout)


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
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        B, L, E = x.shape[0], x.shape[1], self.out_proj.in_features
        q, k, v = (lin(x).view(B, L, self.num_heads, E // self.num_heads).transpose(1, 2)
                   for lin in (self.W_query, self.W_key, self.W_value))
        out = sdpa(q, k, v, causal=True, dropout=self.dropout)
        return self.out_proj(out.transpose(1, 2).reshape(B, L, E))
