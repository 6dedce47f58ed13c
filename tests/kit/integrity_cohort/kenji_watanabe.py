# Kenji Watanabe, attention homework (ch. 3)

import math
import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        steps = x.size(1)
        qq, kk, vv = self.W_query(x), self.W_key(x), self.W_value(x)
        w = attention_scores(qq, kk).masked_fill(self.mask[:steps, :steps], float("-inf"))
        w = self.dropout(scaled_attention_weights(w, kk.size(-1)))
        return context_vectors(w, vv)


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
        assert d_out % num_heads == 0, "num_heads has to divide d_out"
        self.nh = num_heads
        self.width = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        bsz, steps, _ = x.size()
        dh = self.width // self.nh
        qq = self.W_query(x).view(bsz, steps, self.nh, dh).transpose(1, 2)
        kk = self.W_key(x).view(bsz, steps, self.nh, dh).transpose(1, 2)
        vv = self.W_value(x).view(bsz, steps, self.nh, dh).transpose(1, 2)
        w = attention_scores(qq, kk).masked_fill(self.mask[:steps, :steps], float("-inf"))
        w = self.dropout(scaled_attention_weights(w, self.width))
        out = context_vectors(w, vv).transpose(1, 2).contiguous().view(bsz, steps, self.width)
        return self.out_proj(out)


def init_qkv_weights(d_in, d_out):
    dims = (d_in, d_out)
    a = torch.rand(dims)
    b = torch.rand(dims)
    c = torch.rand(dims)
    return a, b, c


def project(x, W_query, W_key, W_value):
    mm = lambda m: torch.einsum("...nd,de->...ne", x, m)
    return mm(W_query), mm(W_key), mm(W_value)


def attention_scores(queries, keys):
    return torch.einsum("...id,...jd->...ij", queries, keys)


def context_vectors(attn_weights, values):
    return torch.einsum("...ij,...jd->...id", attn_weights, values)


def scaled_attention_weights(scores, d_k):
    return nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    qs = torch.randn(num_trials, dim, generator=gen)
    ks = torch.randn(num_trials, dim, generator=gen)
    d = torch.einsum("td,td->t", qs, ks)
    return torch.var(d, unbiased=False).item(), torch.var(d / math.sqrt(dim), unbiased=False).item()


def causal_mask(context_length):
    return torch.ones(context_length, context_length, dtype=torch.bool).triu(diagonal=1)


def mask_and_renormalize(attn_weights):
    later = causal_mask(attn_weights.size(-1)).to(attn_weights.device)
    w = torch.where(later, torch.zeros_like(attn_weights), attn_weights)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    later = causal_mask(scores.size(-1)).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(later, float("-inf")), d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    kept = torch.empty_like(attn_weights).bernoulli_(1 - p)
    return attn_weights * kept / (1 - p)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        w = scaled_attention_weights(attention_scores(self.W_query(x), self.W_key(x)), self.W_key.out_features)
        return context_vectors(w, self.W_value(x))


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        qq, kk, vv = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(qq, kk), kk.size(-1)), vv)
