"""Attention exercise. Gustavo Pereira.

Notation from Karpathy's GPT lecture: B batch, T time (tokens), C channels.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

NEG_INF = float("-inf")


def lower_triangle(T, device=None):
    return torch.tril(torch.ones(T, T, device=device))


# ---- step 1 ----
def init_qkv_weights(d_in, d_out):
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# ---- step 2 ----
def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores * d_k ** -0.5, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(num_trials, dim, generator=gen)
    b = torch.randn(num_trials, dim, generator=gen)
    aff = torch.bmm(a.unsqueeze(1), b.unsqueeze(2)).flatten()
    return aff.var().item(), (aff * dim ** -0.5).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        affinities = q @ k.transpose(-2, -1) * k.size(-1) ** -0.5
        return F.softmax(affinities, dim=-1) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        affinities = q @ k.transpose(-2, -1) * k.size(-1) ** -0.5
        return F.softmax(affinities, dim=-1) @ v


# ---- step 3 ----
def causal_mask(context_length):
    return lower_triangle(context_length) == 0


def mask_and_renormalize(attn_weights):
    T = attn_weights.size(-1)
    kept = attn_weights * lower_triangle(T, attn_weights.device)
    return kept / kept.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    T = scores.size(-1)
    affinities = scores.masked_fill(lower_triangle(T, scores.device) == 0, NEG_INF)
    return F.softmax(affinities * d_k ** -0.5, dim=-1)


# ---- step 4 ----
def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    coin = torch.rand_like(attn_weights)
    return torch.where(coin < p, torch.zeros_like(attn_weights), attn_weights / (1 - p))


# ---- step 5 ----
class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", lower_triangle(context_length))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        affinities = q @ k.transpose(-2, -1) * k.size(-1) ** -0.5
        affinities = affinities.masked_fill(self.mask[:T, :T] == 0, NEG_INF)
        probs = self.dropout(F.softmax(affinities, dim=-1))
        return probs @ v


# ---- step 6 ----
class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# ---- step 7 ----
class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("num_heads must divide d_out")
        self.n_head = num_heads
        self.head_size = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", lower_triangle(context_length))

    def split_heads(self, t, B, T):
        return t.view(B, T, self.n_head, self.head_size).transpose(1, 2)

    def forward(self, x):
        B, T, C = x.shape
        q = self.split_heads(self.W_query(x), B, T)
        k = self.split_heads(self.W_key(x), B, T)
        v = self.split_heads(self.W_value(x), B, T)
        affinities = q @ k.transpose(-2, -1) * self.head_size ** -0.5
        affinities = affinities.masked_fill(self.mask[:T, :T] == 0, NEG_INF)
        probs = self.dropout(F.softmax(affinities, dim=-1))
        heads_out = probs @ v                      # (B, nh, T, hs)
        merged = heads_out.contiguous().view(B, T, self.n_head * self.head_size)
        return self.out_proj(merged)
