import math
import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    scale = d_k ** -0.5
    return torch.softmax(scores * scale, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    d = (q * k).sum(-1)
    mean = d.mean()
    before = ((d - mean) ** 2).sum() / num_trials
    after = before / dim  # Var(X / c) = Var(X) / c^2, with c = sqrt(dim)
    return before.item(), after.item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.scale = d_out ** -0.5

    def forward(self, x):
        q = torch.matmul(x, self.W_query)
        k = torch.matmul(x, self.W_key)
        v = torch.matmul(x, self.W_value)
        attn = torch.softmax(torch.matmul(q, k.T) * self.scale, dim=-1)
        return torch.matmul(attn, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.scale = d_out ** -0.5

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        attn = torch.softmax(torch.matmul(q, k.T) * self.scale, dim=-1)
        return torch.matmul(attn, v)


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    attn = attn_weights.masked_fill(causal_mask(n).to(attn_weights.device), 0)
    return attn / attn.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    attn = scores.masked_fill(causal_mask(n).to(scores.device), float("-inf"))
    return scaled_attention_weights(attn, d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    keep = torch.rand_like(attn_weights) >= p
    return attn_weights * keep * (1 / (1 - p))


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.scale = d_out ** -0.5
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        attn = torch.matmul(q, k.transpose(1, 2)) * self.scale
        attn = attn.masked_fill(self.mask[:n, :n].bool(), float("-inf"))
        attn = self.dropout(attn.softmax(dim=-1))
        return torch.matmul(attn, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.scale = self.head_dim ** -0.5
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, n, _ = x.shape
        q = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        attn = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        attn = attn.masked_fill(self.mask[:n, :n].bool(), float("-inf"))
        attn = self.dropout(attn.softmax(dim=-1))
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(out)
