import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def init_qkv_weights(d_in, d_out):
    q = torch.rand(d_in, d_out)
    k = torch.rand(d_in, d_out)
    v = torch.rand(d_in, d_out)
    return q, k, v


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-1, -2)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / d_k ** 0.5, -1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(num_trials, 2, dim, generator=g)
    d = x[:, 0].mul(x[:, 1]).sum(1)
    return float(d.var()), float((d / dim ** 0.5).var())


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return F.softmax(q @ k.T / k.shape[-1] ** 0.5, -1) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return F.softmax(q @ k.T / k.shape[-1] ** 0.5, -1) @ v


def causal_mask(context_length):
    return torch.tril(torch.ones(context_length, context_length)) == 0


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    w = attn_weights * torch.tril(torch.ones(n, n))
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    s = scores.masked_fill(causal_mask(scores.shape[-1]), float("-inf"))
    return F.softmax(s / d_k ** 0.5, 1)


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p=p, training=training)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, qkv_bias)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("tri", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = (q @ k.transpose(-1, -2)).masked_fill(self.tri[:T, :T] == 0, float("-inf"))
        a = self.drop(F.softmax(s / k.shape[-1] ** 0.5, 1))
        return a @ v


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                   for _ in range(num_heads))

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.nh = num_heads
        self.W_query = nn.Linear(d_in, d_out, qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, qkv_bias)
        self.proj = nn.Linear(d_out, d_out)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("tri", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        B, T, _ = x.shape
        q = self.W_query(x).view(B, T, self.nh, -1).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.nh, -1).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.nh, -1).transpose(1, 2)
        s = (q @ k.transpose(-1, -2)).masked_fill(self.tri[:T, :T] == 0, float("-inf"))
        a = self.drop(F.softmax(s / k.shape[-1] ** 0.5, 1))
        return self.proj((a @ v).transpose(1, 2).reshape(B, T, -1))
