"""Attention mechanisms, step by step: your working copy.

Isabel Fernandez. I tried to write the first steps without any matrix
product so I understand the indices; the modules reuse those functions.
"""

import math

import torch
from torch import nn


def _row_softmax(m):
    # NB: subtract the row max first, otherwise exp() overflows for big scores
    m = m - m.amax(dim=-1, keepdim=True)
    e = m.exp()
    return e / e.sum(dim=-1, keepdim=True)


def _sample_var(t):
    # NB: unbiased (n - 1), same as torch.var
    dev = t - t.mean()
    return (dev * dev).sum() / (t.numel() - 1)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    trio = []
    for _ in range(3):          # query, key, value -- this order!
        trio.append(torch.rand(d_in, d_out))
    return tuple(trio)


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling


def attention_scores(queries, keys):
    n = queries.shape[-2]
    rows = []
    for i in range(n):
        q_i = queries[..., i, :]                                # (..., d_k)
        rows.append((keys * q_i.unsqueeze(-2)).sum(dim=-1))     # (..., n)
    return torch.stack(rows, dim=-2)


def scaled_attention_weights(scores, d_k):
    return _row_softmax(scores / math.sqrt(d_k))


def context_vectors(attn_weights, values):
    # z_i = sum over j of a_ij * v_j, accumulated one key at a time
    out = torch.zeros(*attn_weights.shape[:-1], values.shape[-1],
                      dtype=values.dtype, device=values.device)
    for j in range(values.shape[-2]):
        out = out + attn_weights[..., :, j:j + 1] * values[..., j:j + 1, :]
    return out


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    d = (q * k).sum(dim=1)
    return _sample_var(d).item(), _sample_var(d / math.sqrt(dim)).item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        a = scaled_attention_weights(attention_scores(q, k), k.shape[-1])
        return context_vectors(a, v)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        a = scaled_attention_weights(attention_scores(q, k), k.shape[-1])
        return context_vectors(a, v)


# %% step: masking


def causal_mask(context_length):
    cols = torch.arange(context_length).view(1, context_length)
    rows = torch.arange(context_length).view(context_length, 1)
    return cols > rows          # j > i  <=>  j is in the future of i


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    w = attn_weights.masked_fill(causal_mask(n).to(attn_weights.device), 0.0)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    s = scores.masked_fill(causal_mask(n).to(scores.device), -math.inf)
    return _row_softmax(s / math.sqrt(d_k))


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    keep = torch.empty_like(attn_weights).uniform_() >= p
    return torch.where(keep, attn_weights / (1 - p), torch.zeros_like(attn_weights))


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def _weights(self, q, k):
        n = q.shape[-2]
        s = (q @ k.transpose(-2, -1)).masked_fill(self.mask[:n, :n], -math.inf)
        return self.dropout(_row_softmax(s / math.sqrt(k.shape[-1])))

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return self._weights(q, k) @ v


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        outs = []
        for head in self.heads:
            outs.append(head(x))
        return torch.cat(outs, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out % num_heads != 0"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def _slice_linear(self, layer, lo, hi, x):
        # NB: head h owns rows lo:hi of the nn.Linear weight (= columns of W)
        bias = None if layer.bias is None else layer.bias[lo:hi]
        return nn.functional.linear(x, layer.weight[lo:hi], bias)

    def forward(self, x):
        n = x.shape[1]
        outs = []
        for h in range(self.num_heads):
            lo, hi = h * self.head_dim, (h + 1) * self.head_dim
            q = self._slice_linear(self.W_query, lo, hi, x)
            k = self._slice_linear(self.W_key, lo, hi, x)
            v = self._slice_linear(self.W_value, lo, hi, x)
            s = (q @ k.transpose(-2, -1)).masked_fill(self.mask[:n, :n], -math.inf)
            a = self.dropout(_row_softmax(s / math.sqrt(self.head_dim)))
            outs.append(a @ v)
        return self.out_proj(torch.cat(outs, dim=-1))
