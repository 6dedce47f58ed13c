"""Attention mechanisms, step by step -- Ravi Shankar's copy.

Naming convention I used everywhere: omega = raw scores, alpha = weights,
zed = context vectors (omega -> alpha -> zed, like the lecture slides).
"""

import math

import torch
from torch import nn

NEG_INF = float("-inf")


def _hide_future(omega, n):
    """Put -inf strictly above the diagonal of the last two axes."""
    future = torch.triu(torch.ones(n, n, device=omega.device), diagonal=1).bool()
    return omega.masked_fill(future, NEG_INF)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)  # 1st draw
    Wk = torch.rand(d_in, d_out)  # 2nd draw
    Wv = torch.rand(d_in, d_out)  # 3rd draw
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    Q_mat = x @ W_query
    K_mat = x @ W_key
    V_mat = x @ W_value
    return Q_mat, K_mat, V_mat


# %% step: scaling


def attention_scores(queries, keys):
    omega = queries @ keys.transpose(-2, -1)
    return omega


def scaled_attention_weights(scores, d_k):
    alpha = torch.softmax(scores / math.sqrt(d_k), dim=-1)
    return alpha


def context_vectors(attn_weights, values):
    zed = attn_weights @ values
    return zed


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator().manual_seed(seed)
    Q_mat = torch.randn(num_trials, dim, generator=rng)
    K_mat = torch.randn(num_trials, dim, generator=rng)
    omega = (Q_mat * K_mat).sum(dim=-1)
    omega_scaled = omega / math.sqrt(dim)
    return omega.var().item(), omega_scaled.var().item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        Q_mat, K_mat, V_mat = project(x, self.W_query, self.W_key, self.W_value)
        omega = attention_scores(Q_mat, K_mat)
        alpha = scaled_attention_weights(omega, K_mat.shape[-1])
        zed = context_vectors(alpha, V_mat)
        return zed


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        Q_mat = self.W_query(x)
        K_mat = self.W_key(x)
        V_mat = self.W_value(x)
        omega = attention_scores(Q_mat, K_mat)
        alpha = scaled_attention_weights(omega, K_mat.shape[-1])
        zed = context_vectors(alpha, V_mat)
        return zed


# %% step: masking


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    alpha = attn_weights * torch.tril(torch.ones(n, n, device=attn_weights.device))
    # small epsilon so an all-zero row can never divide by zero
    return alpha / (alpha.sum(dim=-1, keepdim=True) + 1e-9)


def causal_attention_weights(scores, d_k):
    omega = _hide_future(scores, scores.shape[-1])
    return scaled_attention_weights(omega, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    survivors = (torch.rand_like(attn_weights) > p).float()
    return attn_weights * survivors / (1.0 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, n, _ = x.shape
        Q_mat = self.W_query(x)
        K_mat = self.W_key(x)
        V_mat = self.W_value(x)
        omega = Q_mat @ K_mat.transpose(1, 2)
        omega = omega.masked_fill(self.mask.bool()[:n, :n], NEG_INF)
        alpha = torch.softmax(omega / math.sqrt(K_mat.shape[-1]), dim=-1)
        alpha = self.dropout(alpha)
        zed = alpha @ V_mat
        return zed


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        heads = []
        for _ in range(num_heads):
            heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.heads = nn.ModuleList(heads)

    def forward(self, x):
        zeds = []
        for head in self.heads:
            zeds.append(head(x))
        return torch.cat(zeds, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "num_heads has to divide d_out"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, n, _ = x.shape
        # (b, n, d_out) -> (b, heads, n, head_dim)
        Q_mat = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        K_mat = self.W_key(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        V_mat = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

        omega = Q_mat @ K_mat.transpose(-2, -1)
        omega = omega.masked_fill(self.mask.bool()[:n, :n], NEG_INF)
        alpha = torch.softmax(omega / math.sqrt(self.head_dim), dim=-1)
        alpha = self.dropout(alpha)

        # glue the heads back together: (b, heads, n, head_dim) -> (b, n, d_out)
        zed = (alpha @ V_mat).reshape(b, n, self.d_out)
        return self.out_proj(zed)
