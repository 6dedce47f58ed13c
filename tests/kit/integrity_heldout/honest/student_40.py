# attention exercise
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
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.permute(*range(keys.dim() - 2), -1, -2))


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    pairs = torch.randn(2, num_trials, dim, generator=gen)
    dots = torch.einsum("td,td->t", pairs[0], pairs[1])
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


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


def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(1) != 0


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]), 0.0)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(scores.masked_fill(causal_mask(scores.shape[-1]), float("-inf")), d_k)


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p, training)


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
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], float("-inf"))
        return context_vectors(self.dropout(scaled_attention_weights(s, k.shape[-1])), v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.heads = num_heads
        self.size = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        q = self.W_query(x).reshape(b, n, self.heads, self.size).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(b, n, self.heads, self.size).permute(0, 2, 1, 3)
        v = self.W_value(x).reshape(b, n, self.heads, self.size).permute(0, 2, 1, 3)
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], float("-inf"))
        a = self.dropout(scaled_attention_weights(s, self.size))
        out = context_vectors(a, v).reshape(b, n, self.heads * self.size)
        return self.proj(out)
