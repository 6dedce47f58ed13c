"""
Attention step by step.
"""
from typing import Tuple

import torch
from torch import nn


# %% step: projection


def init_qkv_weights(d_in: int, d_out: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (torch.rand(d_in, d_out),   # query
            torch.rand(d_in, d_out),   # key
            torch.rand(d_in, d_out))   # value


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def _temperature(d_k: int) -> float:
    return 1.0 / d_k


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores * _temperature(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim: int, num_trials: int = 1000, seed: int = 0) -> Tuple[float, float]:
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen)
    k = torch.randn(num_trials, dim, generator=gen)
    s = (q * k).sum(-1)
    return s.var().item(), (s / dim ** 0.5).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.scale = _temperature(d_out)

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        w = torch.softmax(attention_scores(q, k) * self.scale, dim=-1)
        return context_vectors(w, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.scale = _temperature(d_out)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = torch.softmax(attention_scores(q, k) * self.scale, dim=-1)
        return context_vectors(w, v)


# %% step: masking


def causal_mask(context_length: int) -> torch.Tensor:
    r = torch.arange(context_length)
    return r.view(1, -1) > r.view(-1, 1)


def mask_and_renormalize(attn_weights):
    w = torch.where(causal_mask(attn_weights.shape[-1]), 0.0, attn_weights)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    s = torch.where(causal_mask(scores.shape[-1]), float("-inf"), scores)
    return scaled_attention_weights(s, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p: float, training: bool = True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p=p, training=True)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.scale = _temperature(d_out)
        self.register_buffer("future", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.where(self.future[:n, :n], float("-inf"), attention_scores(q, k))
        w = self.dropout(torch.softmax(s * self.scale, dim=-1))
        return context_vectors(w, v)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.scale = _temperature(self.head_dim)
        self.register_buffer("future", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        q = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        s = torch.where(self.future[:n, :n], float("-inf"), attention_scores(q, k))
        w = self.dropout(torch.softmax(s * self.scale, dim=-1))
        o = context_vectors(w, v).transpose(1, 2).reshape(b, n, -1)
        return self.out_proj(o)
