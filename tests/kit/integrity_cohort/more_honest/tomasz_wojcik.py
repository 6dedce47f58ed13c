"""Tomasz Wojcik. Everything through einsum, with the index letters written out."""
import math

import torch
from torch import nn
import torch.nn.functional as F


def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    return (torch.einsum("...ti,io->...to", x, W_query),
            torch.einsum("...ti,io->...to", x, W_key),
            torch.einsum("...ti,io->...to", x, W_value))


def attention_scores(queries, keys):
    return torch.einsum("...qd,...kd->...qk", queries, keys)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores * (1.0 / math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return torch.einsum("...qk,...kd->...qd", attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    b = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    dots = torch.einsum("nd,nd->n", a, b)
    centred = dots - dots.mean()
    var_raw = (centred ** 2).mean().item()
    return var_raw, var_raw / dim


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = torch.einsum("ti,io->to", x, self.W_query)
        k = torch.einsum("ti,io->to", x, self.W_key)
        v = torch.einsum("ti,io->to", x, self.W_value)
        w = F.softmax(torch.einsum("qd,kd->qk", q, k) / math.sqrt(k.shape[1]), dim=1)
        return torch.einsum("qk,kd->qd", w, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = F.softmax(torch.einsum("qd,kd->qk", q, k) / math.sqrt(k.shape[1]), dim=1)
        return torch.einsum("qk,kd->qd", w, v)


def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(diagonal=1).bool()


def mask_and_renormalize(attn_weights):
    keep = ~causal_mask(attn_weights.shape[-1]).to(attn_weights.device)
    kept = attn_weights * keep
    return kept / kept.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    future = causal_mask(scores.shape[-1]).to(scores.device)
    return F.softmax(scores.masked_fill(future, float("-inf")) / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p=p, training=training)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.einsum("bqd,bkd->bqk", q, k).masked_fill(self.mask[:t, :t], float("-inf"))
        w = self.dropout(F.softmax(s / math.sqrt(k.shape[-1]), dim=-1))
        return torch.einsum("bqk,bkd->bqd", w, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                   for _ in range(num_heads))

    def forward(self, x):
        return torch.cat(tuple(h(x) for h in self.heads), dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "heads must split d_out evenly"
        self.h = num_heads
        self.dh = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).unflatten(-1, (self.h, self.dh))
        k = self.W_key(x).unflatten(-1, (self.h, self.dh))
        v = self.W_value(x).unflatten(-1, (self.h, self.dh))
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.dh)
        s = s.masked_fill(self.mask[:t, :t], float("-inf"))
        w = self.dropout(F.softmax(s, dim=-1))
        o = torch.einsum("bhqk,bkhd->bqhd", w, v).flatten(2)
        return self.out_proj(o)
