"""Attention exercise -- Priya"""
import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    """q, k, v (in that order)."""
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.swapaxes(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores * (1 / math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen)
    k = torch.randn(num_trials, dim, generator=gen)
    qk = torch.diag(q @ k.T)
    return qk.var().item(), (qk / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return scaled_attention_weights(attention_scores(q, k), k.shape[-1]) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return scaled_attention_weights(attention_scores(q, k), k.shape[-1]) @ v


def causal_mask(context_length):
    upper = torch.ones(context_length, context_length).triu(diagonal=1)
    return upper.bool()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    w = torch.where(causal_mask(n), torch.zeros_like(attn_weights), attn_weights)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    s = torch.where(causal_mask(n), torch.tensor(float("-inf")), scores)
    return scaled_attention_weights(s, d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    keep = torch.rand_like(attn_weights).ge(p)
    return attn_weights.mul(keep).div(1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.where(self.mask[:T, :T], torch.tensor(float("-inf")), attention_scores(q, k))
        return self.dropout(scaled_attention_weights(s, k.shape[-1])) @ v


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


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
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        B, T, _ = x.shape
        q = self.W_query(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        s = torch.where(self.mask, torch.tensor(float("-inf")), attention_scores(q, k))
        w = self.dropout(scaled_attention_weights(s, self.head_dim))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, T, -1))
