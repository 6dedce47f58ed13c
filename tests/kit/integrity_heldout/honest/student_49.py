import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    a = torch.rand(d_in, d_out)
    b = torch.rand(d_in, d_out)
    c = torch.rand(d_in, d_out)
    return a, b, c


def project(x, W_query, W_key, W_value):
    stacked = torch.stack([W_query, W_key, W_value])      # (3, d_in, d_out)
    out = torch.matmul(x.unsqueeze(-3), stacked)          # (..., 3, n, d_out)
    return out.select(-3, 0), out.select(-3, 1), out.select(-3, 2)


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    qk = torch.randn(num_trials, 2 * dim, generator=g)
    q, k = qk.chunk(2, dim=-1)
    d = (q * k).sum(-1)
    return d.var().item(), (d / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.shape[-1]), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.shape[-1]), v)


# %% step: masking


def causal_mask(context_length):
    return torch.ones(context_length, context_length, dtype=torch.bool).triu(diagonal=1)


def mask_and_renormalize(attn_weights):
    w = attn_weights.tril()
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(scores.masked_fill(causal_mask(scores.shape[-1]), float("-inf")), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p, training=training)


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
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = attention_scores(q, k).masked_fill(self.mask[:t, :t], float("-inf"))
        return context_vectors(self.dropout(scaled_attention_weights(s, k.shape[-1])), v)


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
    """One fused projection producing q, k and v for all heads, then chunk."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, t, _ = x.shape
        qkv = self.qkv(x).view(b, t, 3, self.num_heads, self.head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)                  # (3, b, h, t, hd)
        q, k, v = qkv.unbind(0)
        s = attention_scores(q, k).masked_fill(self.mask[:t, :t], float("-inf"))
        w = self.dropout(scaled_attention_weights(s, self.head_dim))
        out = context_vectors(w, v).permute(0, 2, 1, 3).reshape(b, t, -1)
        return self.out_proj(out)
