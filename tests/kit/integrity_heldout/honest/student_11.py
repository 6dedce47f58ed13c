import math

import torch
from torch import nn


# ---------------------------------------------------------------- helpers

def _draw(d_in, d_out):
    return torch.rand(d_in, d_out)


def _swap_last_two(t):
    return t.transpose(-2, -1)


def _scale(scores, d_k):
    return scores / math.sqrt(d_k)


def _row_softmax(t):
    return torch.softmax(t, dim=-1)


def _upper(n, device=None):
    return torch.triu(torch.ones(n, n, dtype=torch.bool, device=device), diagonal=1)


def _hide_future(scores, mask):
    return scores.masked_fill(mask, float("-inf"))


def _split_heads(t, num_heads):
    b, n, d = t.shape
    return t.view(b, n, num_heads, d // num_heads).transpose(1, 2)


def _merge_heads(t):
    b, h, n, hd = t.shape
    return t.transpose(1, 2).contiguous().view(b, n, h * hd)


def _attend(q, k, v, mask=None, dropout=None):
    s = attention_scores(q, k)
    if mask is not None:
        s = _hide_future(s, mask)
    w = scaled_attention_weights(s, k.shape[-1])
    if dropout is not None:
        w = dropout(w)
    return context_vectors(w, v)


def _make_linears(d_in, d_out, bias):
    return (nn.Linear(d_in, d_out, bias=bias),
            nn.Linear(d_in, d_out, bias=bias),
            nn.Linear(d_in, d_out, bias=bias))


# %% step: projection


def init_qkv_weights(d_in, d_out):
    w_q = _draw(d_in, d_out)
    w_k = _draw(d_in, d_out)
    w_v = _draw(d_in, d_out)
    return w_q, w_k, w_v


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ _swap_last_two(keys)


def scaled_attention_weights(scores, d_k):
    return _row_softmax(_scale(scores, d_k))


def context_vectors(attn_weights, values):
    return attn_weights @ values


def _sample_dots(dim, num_trials, gen):
    q = torch.randn(num_trials, dim, generator=gen)
    k = torch.randn(num_trials, dim, generator=gen)
    return (q * k).sum(dim=-1)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    dots = _sample_dots(dim, num_trials, gen)
    return float(dots.var()), float(_scale(dots, dim).var())


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(_draw(d_in, d_out))
        self.W_key = nn.Parameter(_draw(d_in, d_out))
        self.W_value = nn.Parameter(_draw(d_in, d_out))

    def forward(self, x):
        return _attend(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = _make_linears(d_in, d_out, qkv_bias)

    def forward(self, x):
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: masking


def causal_mask(context_length):
    return _upper(context_length)


def mask_and_renormalize(attn_weights):
    kept = attn_weights.masked_fill(_upper(attn_weights.shape[-1], attn_weights.device), 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(_hide_future(scores, _upper(scores.shape[-1], scores.device)), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = _make_linears(d_in, d_out, qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _upper(context_length))

    def forward(self, x):
        n = x.shape[-2]
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x),
                       mask=self.mask[:n, :n], dropout=self.dropout)


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
        self.W_query, self.W_key, self.W_value = _make_linears(d_in, d_out, qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _upper(context_length))

    def forward(self, x):
        n = x.shape[1]
        q = _split_heads(self.W_query(x), self.num_heads)
        k = _split_heads(self.W_key(x), self.num_heads)
        v = _split_heads(self.W_value(x), self.num_heads)
        ctx = _attend(q, k, v, mask=self.mask[:n, :n], dropout=self.dropout)
        return self.out_proj(_merge_heads(ctx))
