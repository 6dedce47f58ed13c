import math

import torch
from torch import nn


def _bmm_scores(q, k, scale):
    """(B, n, d) x (B, n, d) -> (B, n, n) via baddbmm with alpha=scale."""
    B, n, _ = q.shape
    out = torch.empty(B, n, k.shape[1], dtype=q.dtype, device=q.device)
    return torch.baddbmm(out, q, k.transpose(1, 2), beta=0.0, alpha=scale)


# %% step: projection

def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling

def attention_scores(queries, keys):
    lead = queries.shape[:-2]
    q = queries.reshape(-1, *queries.shape[-2:])
    k = keys.reshape(-1, *keys.shape[-2:])
    s = _bmm_scores(q, k, 1.0)
    return s.reshape(*lead, s.shape[-2], s.shape[-1])


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, 1, dim, generator=g)
    k = torch.randn(num_trials, 1, dim, generator=g)
    raw = torch.bmm(q, k.transpose(1, 2)).flatten()
    return raw.var().item(), raw.mul(1 / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = (x @ self.W_query)[None], (x @ self.W_key)[None], (x @ self.W_value)[None]
        s = _bmm_scores(q, k, 1 / math.sqrt(k.shape[-1]))
        return torch.bmm(torch.softmax(s, dim=-1), v)[0]


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x)[None], self.W_key(x)[None], self.W_value(x)[None]
        s = _bmm_scores(q, k, 1 / math.sqrt(k.shape[-1]))
        return torch.bmm(torch.softmax(s, dim=-1), v)[0]


# %% step: masking

def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights):
    w = attn_weights * torch.tril(torch.ones_like(attn_weights))
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    masked = scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf)
    return torch.softmax(masked / math.sqrt(d_k), dim=-1)


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
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = _bmm_scores(q, k, 1 / math.sqrt(k.shape[-1]))
        s = s.masked_fill(self.mask[:n, :n], -torch.inf)
        return torch.bmm(self.dropout(torch.softmax(s, dim=-1)), v)


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
        self.h = num_heads
        self.dh = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape

        def fold(t):
            return t.view(b, n, self.h, self.dh).transpose(1, 2).reshape(b * self.h, n, self.dh)

        q, k, v = fold(self.W_query(x)), fold(self.W_key(x)), fold(self.W_value(x))
        s = _bmm_scores(q, k, 1 / math.sqrt(self.dh)).masked_fill(self.mask[:n, :n], -torch.inf)
        o = torch.bmm(self.dropout(torch.softmax(s, dim=-1)), v)
        o = o.view(b, self.h, n, self.dh).transpose(1, 2).reshape(b, n, self.h * self.dh)
        return self.out_proj(o)
