import math

import torch
import torch.nn as nn
import torch.nn.functional as F

NEG = float("-inf")


def init_qkv_weights(d_in, d_out):
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)


def project(x, W_query, W_key, W_value):
    return x.matmul(W_query), x.matmul(W_key), x.matmul(W_value)


def attention_scores(queries, keys):
    return queries.matmul(keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    d = (q * k).sum(-1)
    return torch.var(d).item(), torch.var(d / math.sqrt(dim)).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.size(-1)), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.size(-1)), v)


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights):
    w = attn_weights * (~causal_mask(attn_weights.size(-1)))
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    scores.masked_fill(causal_mask(scores.size(-1)), NEG)
    return scaled_attention_weights(scores, d_k)


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p, training=training)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("causal", causal_mask(context_length))

    def forward(self, x):
        n = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = attention_scores(q, k)
        scores.masked_fill(self.causal[:n, :n], NEG)
        w = self.attn_dropout(scaled_attention_weights(scores, k.size(-1)))
        return context_vectors(w, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_heads = num_heads
        self.d_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("causal", causal_mask(context_length))

    def forward(self, x):
        B, n, _ = x.size()
        q = self.W_query(x).view(B, n, self.n_heads, self.d_head).transpose(1, 2)
        k = self.W_key(x).view(B, n, self.n_heads, self.d_head).transpose(1, 2)
        v = self.W_value(x).view(B, n, self.n_heads, self.d_head).transpose(1, 2)
        scores = attention_scores(q, k)
        scores.masked_fill(self.causal[:n, :n], NEG)
        w = self.attn_dropout(scaled_attention_weights(scores, self.d_head))
        out = context_vectors(w, v).transpose(1, 2).contiguous().view(B, n, -1)
        return self.out_proj(out)
