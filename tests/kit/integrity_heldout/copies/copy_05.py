import math

import torch
from torch import nn


# %% step: projection


def init_qkv_weights(d_in, d_out):
    a = _rand_mat(d_in, d_out)
    b = _rand_mat(d_in, d_out)
    c = _rand_mat(d_in, d_out)
    return a, b, c


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, _t(keys))


def scaled_attention_weights(scores, d_k):
    return _sm(_rescale(scores, d_k))


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    samples = _dots(dim, num_trials, g)
    return float(samples.var()), float(_rescale(samples, dim).var())


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(_rand_mat(d_in, d_out))
        self.W_key = nn.Parameter(_rand_mat(d_in, d_out))
        self.W_value = nn.Parameter(_rand_mat(d_in, d_out))

    def forward(self, x):
        return _core(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = _three_linears(d_in, d_out, qkv_bias)

    def forward(self, x):
        return _core(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: masking


def causal_mask(context_length):
    return _future_mask(context_length)


def mask_and_renormalize(attn_weights):
    z = attn_weights.masked_fill(_future_mask(attn_weights.shape[-1], attn_weights.device), 0.0)
    return z / z.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(_apply_mask(scores, _future_mask(scores.shape[-1], scores.device)), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.h = num_heads
        self.W_query, self.W_key, self.W_value = _three_linears(d_in, d_out, qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("fmask", _future_mask(context_length))

    def forward(self, x):
        T = x.shape[1]
        qh = _to_heads(self.W_query(x), self.h)
        kh = _to_heads(self.W_key(x), self.h)
        vh = _to_heads(self.W_value(x), self.h)
        out = _core(qh, kh, vh, mask=self.fmask[:T, :T], dropout=self.drop)
        return self.out_proj(_from_heads(out))


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = _three_linears(d_in, d_out, qkv_bias)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("fmask", _future_mask(context_length))

    def forward(self, x):
        T = x.shape[-2]
        return _core(self.W_query(x), self.W_key(x), self.W_value(x),
                     mask=self.fmask[:T, :T], dropout=self.drop)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([m(x) for m in self.heads], dim=-1)


# ================================================================ utilities


def _rand_mat(rows, cols):
    return torch.rand(rows, cols)


def _t(m):
    return m.transpose(-1, -2)


def _rescale(z, d_k):
    return z * d_k ** -0.5


def _sm(z):
    return torch.softmax(z, dim=-1)


def _future_mask(n, device=None):
    return torch.triu(torch.ones(n, n, dtype=torch.bool, device=device), diagonal=1)


def _apply_mask(z, m):
    return z.masked_fill(m, float("-inf"))


def _to_heads(t, num_heads):
    B, T, D = t.shape
    return t.view(B, T, num_heads, D // num_heads).permute(0, 2, 1, 3)


def _from_heads(t):
    B, H, T, Dh = t.shape
    return t.permute(0, 2, 1, 3).contiguous().view(B, T, H * Dh)


def _core(q, k, v, mask=None, dropout=None):
    z = attention_scores(q, k)
    if mask is not None:
        z = _apply_mask(z, mask)
    w = scaled_attention_weights(z, k.shape[-1])
    if dropout is not None:
        w = dropout(w)
    return context_vectors(w, v)


def _three_linears(d_in, d_out, bias):
    return (nn.Linear(d_in, d_out, bias=bias),
            nn.Linear(d_in, d_out, bias=bias),
            nn.Linear(d_in, d_out, bias=bias))


def _dots(dim, num_trials, gen):
    qq = torch.randn(num_trials, dim, generator=gen)
    kk = torch.randn(num_trials, dim, generator=gen)
    return (qq * kk).sum(dim=-1)
