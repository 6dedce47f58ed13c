"""Chapter 3 attention -- D. Kowalski.

Kept it short. MultiHeadAttention uses PyTorch's fused kernel at the end
(same math as the chapter, checked against my CausalAttention by hand).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


# %% step: projection

def init_qkv_weights(d_in, d_out):
    return tuple(torch.rand(d_in, d_out) for _ in "qkv")


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling

def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, num_trials, dim, generator=g)
    s = (q * k).sum(-1)
    return s.var().item(), (s / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return scaled_attention_weights(q @ k.T, k.shape[-1]) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return scaled_attention_weights(q @ k.T, k.shape[-1]) @ v


# %% step: masking

def causal_mask(context_length):
    return torch.ones(context_length, context_length, dtype=torch.bool).triu(diagonal=1)


def mask_and_renormalize(attn_weights):
    n = attn_weights.size(-1)
    w = attn_weights.tril()
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.size(-1)
    m = causal_mask(n).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(m, float("-inf")), d_k)


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
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = (q @ k.transpose(1, 2)).masked_fill(self.mask[:n, :n], float("-inf"))
        return self.dropout(F.softmax(s / math.sqrt(k.size(-1)), dim=-1)) @ v


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                   for _ in range(num_heads))

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=~self.mask[:n, :n],
            dropout_p=self.dropout.p if self.training else 0.0,
        )
        return self.out_proj(out.transpose(1, 2).reshape(b, n, self.d_out))
