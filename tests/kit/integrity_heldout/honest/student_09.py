import math
import torch
from torch import nn


# %% step: projection

def init_qkv_weights(d_in, d_out):
    generator_calls = []
    for _ in range(3):
        generator_calls.append(torch.rand(d_in, d_out))
    wq, wk, wv = generator_calls
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling

def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    out = scores.clone()
    out.div_(math.sqrt(d_k))
    return out.softmax(dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    dots = torch.einsum("ij,ij->i", q, k)
    scaled = dots.clone().div_(math.sqrt(dim))
    return dots.var().item(), scaled.var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
        s = q @ k.T
        s = s / math.sqrt(k.shape[1])
        return s.softmax(dim=-1) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        s = q @ k.T
        s = s / math.sqrt(k.shape[1])
        return s.softmax(dim=-1) @ v


# %% step: masking

def causal_mask(context_length):
    m = torch.ones(context_length, context_length, dtype=torch.bool)
    m.triu_(diagonal=1)
    return m


def mask_and_renormalize(attn_weights):
    w = attn_weights.clone()
    w.masked_fill_(causal_mask(w.shape[-1]), 0.0)
    w.div_(w.sum(dim=-1, keepdim=True))
    return w


def causal_attention_weights(scores, d_k):
    s = scores.clone()
    s.masked_fill_(causal_mask(s.shape[-1]), -math.inf)
    return scaled_attention_weights(s, d_k)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    out = attn_weights.clone()
    drop = torch.rand_like(out) < p
    out.masked_fill_(drop, 0.0)
    out.mul_(1.0 / (1.0 - p))
    return out


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
        s = q @ k.transpose(1, 2)
        s.masked_fill_(self.mask[:n, :n], -math.inf)
        s.div_(math.sqrt(k.shape[-1]))
        w = self.dropout(s.softmax(dim=-1))
        return w @ v


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
        self.head_dim = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        q = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        s = q @ k.transpose(2, 3)
        s.masked_fill_(self.mask[:n, :n], -math.inf)
        s.div_(math.sqrt(self.head_dim))
        w = self.dropout(s.softmax(dim=-1))
        ctx = (w @ v).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(ctx)
