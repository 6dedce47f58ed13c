import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-1, -2)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores * (d_k ** -0.5), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    prod = (q * k).sum(-1)
    mean = prod.mean()
    var_b = ((prod - mean) ** 2).sum() / (num_trials - 1)
    var_a = var_b / dim
    return var_b.item(), var_a.item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        Q, K, V = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return torch.softmax(Q @ K.transpose(-1, -2) * K.shape[-1] ** -0.5, dim=-1) @ V


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        return torch.softmax(Q @ K.transpose(-1, -2) * K.shape[-1] ** -0.5, dim=-1) @ V


# %% step: masking


def causal_mask(context_length):
    return torch.ones(context_length, context_length).tril().logical_not()


def mask_and_renormalize(attn_weights):
    keep = torch.ones_like(attn_weights).tril()
    masked = attn_weights * keep
    return masked / masked.sum(-1).unsqueeze(-1)


def causal_attention_weights(scores, d_k):
    return torch.softmax(scores.masked_fill(causal_mask(scores.size(-1)), -torch.inf) * d_k ** -0.5, dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return attn_weights * torch.empty_like(attn_weights).bernoulli_(1 - p) / (1 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        T = x.size(1)
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        S = (Q @ K.transpose(-1, -2)).masked_fill(self.mask[:T, :T], -torch.inf)
        return self.dropout(torch.softmax(S * K.size(-1) ** -0.5, dim=-1)) @ V


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """Stacks the heads on a new axis and flattens instead of cat."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        stacked = torch.stack([h(x) for h in self.heads], dim=2)   # (b, n, H, d_out)
        return stacked.flatten(start_dim=2)                        # (b, n, H*d_out)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.H = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        B, T, _ = x.shape
        Q = torch.stack(self.W_query(x).chunk(self.H, dim=-1), dim=1)   # (B, H, T, hd)
        K = torch.stack(self.W_key(x).chunk(self.H, dim=-1), dim=1)
        V = torch.stack(self.W_value(x).chunk(self.H, dim=-1), dim=1)
        S = (Q @ K.transpose(-1, -2)).masked_fill(self.mask[:T, :T], -torch.inf)
        A = self.dropout(torch.softmax(S * Q.size(-1) ** -0.5, dim=-1))
        out = torch.cat((A @ V).unbind(dim=1), dim=-1)                  # (B, T, d_out)
        return self.out_proj(out)
