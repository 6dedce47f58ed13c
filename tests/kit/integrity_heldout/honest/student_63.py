import math
import torch
from torch import nn
F = nn.functional


def init_qkv_weights(d_in, d_out):
    return tuple(torch.rand(d_in, d_out) for _ in "qkv")


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.mT


def scaled_attention_weights(scores, d_k):
    return (scores / d_k ** .5).softmax(-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    d = (torch.randn(num_trials, dim, generator=g) * torch.randn(num_trials, dim, generator=g)).sum(1)
    return d.var().item(), (d / dim ** .5).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Parameter(torch.rand(d_in, d_out)) for _ in range(3))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return scaled_attention_weights(q @ k.mT, k.shape[-1]) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, qkv_bias) for _ in range(3))

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return scaled_attention_weights(q @ k.mT, k.shape[-1]) @ v


def causal_mask(context_length):
    return torch.ones(context_length, context_length, dtype=bool).triu(1)


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]), 0)
    return w / w.sum(-1, True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(scores.masked_fill(causal_mask(scores.shape[-1]), -math.inf), d_k)


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p, training)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, qkv_bias) for _ in range(3))
        self.drop = nn.Dropout(dropout)
        self.register_buffer("m", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return self.drop(scaled_attention_weights((q @ k.mT).masked_fill(self.m[:n, :n], -math.inf), k.shape[-1])) @ v


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads))

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert not d_out % num_heads
        self.h = num_heads
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, qkv_bias) for _ in range(3))
        self.out_proj = nn.Linear(d_out, d_out)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("m", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (f(x).view(b, n, self.h, -1).transpose(1, 2) for f in (self.W_query, self.W_key, self.W_value))
        a = self.drop(scaled_attention_weights((q @ k.mT).masked_fill(self.m[:n, :n], -math.inf), k.shape[-1]))
        return self.out_proj((a @ v).transpose(1, 2).reshape(b, n, -1))
