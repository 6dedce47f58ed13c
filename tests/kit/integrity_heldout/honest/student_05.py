import math

import torch
from torch import nn

# Step 1 -----------------------------------------------------------------


def init_qkv_weights(d_in, d_out):
    w_query = torch.rand(d_in, d_out)
    w_key = torch.rand(d_in, d_out)
    w_value = torch.rand(d_in, d_out)
    return w_query, w_key, w_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# Step 2 -----------------------------------------------------------------


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    vals = torch.zeros(num_trials)
    for i in range(num_trials):
        q = torch.randn(dim, generator=g)
        k = torch.randn(dim, generator=g)
        vals[i] = (q * k).sum()
    return vals.var().item(), (vals / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return torch.softmax(q @ k.T / math.sqrt(k.shape[-1]), dim=-1) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return torch.softmax(q @ k.T / math.sqrt(k.shape[-1]), dim=-1) @ v


# Step 3 -----------------------------------------------------------------


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights):
    masked = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]), 0.0)
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    masked = scores.masked_fill(causal_mask(scores.shape[-1]), float("-inf"))
    return torch.softmax(masked / math.sqrt(d_k), dim=-1)


# Step 4 -----------------------------------------------------------------


def attention_dropout(attn_weights, p, training=True):
    d = nn.Dropout(p)
    d.train(training)
    return d(attn_weights)


# Step 5 -----------------------------------------------------------------


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = q @ k.transpose(1, 2)
        s = s.masked_fill(self.mask, float("-inf"))
        w = self.dropout(torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1))
        return w @ v


# Step 6 -----------------------------------------------------------------


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# Step 7 -----------------------------------------------------------------


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
        s = q @ k.transpose(-2, -1)
        s = s.masked_fill(self.mask, float("-inf"))
        w = self.dropout(torch.softmax(s / math.sqrt(self.head_dim), dim=-1))
        out = (w @ v).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(out)
