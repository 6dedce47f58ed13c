import math

import torch
from torch import nn


class Attn:
    """Namespace of static helpers (I like grouping related maths)."""

    @staticmethod
    def scores(q, k):
        return q @ k.transpose(-2, -1)

    @staticmethod
    def normalise(s, d_k):
        return torch.softmax(s / math.sqrt(d_k), dim=-1)

    @staticmethod
    def upper(n):
        return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)

    @staticmethod
    def heads_first(t, h):
        b, n, d = t.shape
        return t.reshape(b, n, h, d // h).transpose(1, 2)

    @staticmethod
    def heads_last(t):
        b, h, n, hd = t.shape
        return t.transpose(1, 2).reshape(b, n, h * hd)


# %% step: projection

def init_qkv_weights(d_in, d_out):
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling

def attention_scores(queries, keys):
    return Attn.scores(queries, keys)


def scaled_attention_weights(scores, d_k):
    return Attn.normalise(scores, d_k)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    dots = torch.sum(q * k, 1)
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    @classmethod
    def from_weights(cls, W_query, W_key, W_value):
        obj = cls(W_query.shape[0], W_query.shape[1])
        with torch.no_grad():
            obj.W_query.copy_(W_query)
            obj.W_key.copy_(W_key)
            obj.W_value.copy_(W_value)
        return obj

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return Attn.normalise(Attn.scores(q, k), k.shape[-1]) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return Attn.normalise(Attn.scores(q, k), k.shape[-1]) @ v


# %% step: masking

def causal_mask(context_length):
    return Attn.upper(context_length)


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(Attn.upper(attn_weights.shape[-1]), 0)
    return w.div(w.sum(-1, keepdim=True))


def causal_attention_weights(scores, d_k):
    return Attn.normalise(scores.masked_fill(Attn.upper(scores.shape[-1]), -torch.inf), d_k)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", Attn.upper(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = Attn.scores(q, k).masked_fill(self.mask[:n, :n], -torch.inf)
        return self.dropout(Attn.normalise(s, k.shape[-1])) @ v


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
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", Attn.upper(context_length))

    def forward(self, x):
        n = x.shape[1]
        q = Attn.heads_first(self.W_query(x), self.num_heads)
        k = Attn.heads_first(self.W_key(x), self.num_heads)
        v = Attn.heads_first(self.W_value(x), self.num_heads)
        s = Attn.scores(q, k).masked_fill(self.mask[:n, :n], -torch.inf)
        ctx = self.dropout(Attn.normalise(s, k.shape[-1])) @ v
        return self.out_proj(Attn.heads_last(ctx))
