"""Functional core + thin modules. Every module delegates to `_causal_sdpa`."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def _sdpa(q, k, v, hide=None, p=0.0, train=False):
    s = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    if hide is not None:
        s = s.masked_fill(hide, -math.inf)
    w = F.softmax(s, dim=-1)
    w = F.dropout(w, p=p, training=train)
    return w @ v


# %% step: projection


def init_qkv_weights(d_in, d_out):
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    # F.linear wants (out, in), so hand it the transposes
    return F.linear(x, W_query.T), F.linear(x, W_key.T), F.linear(x, W_value.T)


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    dp = torch.diagonal(q @ k.T)
    return dp.var().item(), dp.div(math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return _sdpa(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return _sdpa(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: masking


def causal_mask(context_length):
    r = torch.arange(context_length)
    return r[:, None] < r[None, :]


def mask_and_renormalize(attn_weights):
    w = attn_weights * (~causal_mask(attn_weights.shape[-1])).to(attn_weights.dtype)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return F.softmax(scores.masked_fill(causal_mask(scores.shape[-1]), -math.inf) / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.p = dropout
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        return _sdpa(self.W_query(x), self.W_key(x), self.W_value(x),
                     hide=self.mask[:n, :n], p=self.p, train=self.training)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat(list(map(lambda h: h(x), self.heads)), dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.p = dropout
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, d = x.shape[0], x.shape[1], self.out_proj.in_features
        hd = d // self.num_heads
        q, k, v = [
            t.view(b, n, self.num_heads, hd).transpose(1, 2)
            for t in (self.W_query(x), self.W_key(x), self.W_value(x))
        ]
        o = _sdpa(q, k, v, hide=self.mask[:n, :n], p=self.p, train=self.training)
        return self.out_proj(o.transpose(1, 2).reshape(b, n, d))
