# Jia Li -- chapter 3 attention
# References: the chapter, and minGPT's model.py for the multi-head part.

import math
import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    shape = (d_in, d_out)
    w_q = torch.rand(shape)
    w_k = torch.rand(shape)
    w_v = torch.rand(shape)
    return w_q, w_k, w_v


def project(x, W_query, W_key, W_value):
    proj = lambda w: torch.einsum("...nd,de->...ne", x, w)
    return proj(W_query), proj(W_key), proj(W_value)


def attention_scores(queries, keys):
    return torch.einsum("...id,...jd->...ij", queries, keys)


def scaled_attention_weights(scores, d_k):
    return nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.einsum("...ij,...jd->...id", attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    qk = torch.einsum("td,td->t", q, k)
    var_before = torch.var(qk, unbiased=False).item()
    var_after = torch.var(qk / math.sqrt(dim), unbiased=False).item()
    return var_before, var_after


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        att = scaled_attention_weights(attention_scores(q, k), k.size(-1))
        return context_vectors(att, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        att = scaled_attention_weights(attention_scores(self.W_query(x), self.W_key(x)),
                                       self.W_key.out_features)
        return context_vectors(att, self.W_value(x))


def causal_mask(context_length):
    return torch.ones(context_length, context_length, dtype=torch.bool).triu(diagonal=1)


def mask_and_renormalize(attn_weights):
    future = causal_mask(attn_weights.size(-1)).to(attn_weights.device)
    att = torch.where(future, torch.zeros_like(attn_weights), attn_weights)
    return att / att.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    future = causal_mask(scores.size(-1)).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(future, float("-inf")), d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    keep = torch.empty_like(attn_weights).bernoulli_(1 - p)
    return attn_weights * keep / (1 - p)


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
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        att = attention_scores(q, k).masked_fill(self.mask[:T, :T], float("-inf"))
        att = self.dropout(scaled_attention_weights(att, k.size(-1)))
        return context_vectors(att, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be a multiple of num_heads"
        self.n_head = num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        B, T, _ = x.size()
        hs = self.d_out // self.n_head
        q = self.W_query(x).view(B, T, self.n_head, hs).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.n_head, hs).transpose(1, 2)
        att = attention_scores(q, k).masked_fill(self.mask[:T, :T], float("-inf"))
        # scale like the single head does
        att = self.dropout(scaled_attention_weights(att, self.d_out))
        y = context_vectors(att, v).transpose(1, 2).contiguous().view(B, T, self.d_out)
        return self.out_proj(y)
