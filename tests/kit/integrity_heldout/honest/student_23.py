import math

import torch
from torch import nn


# %% step: projection

def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# %% step: scaling

def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    scaled = scores / math.sqrt(d_k)
    weights = torch.softmax(scaled, dim=0)
    return weights


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator()
    gen.manual_seed(seed)
    results = []
    for _ in range(num_trials):
        q = torch.randn(dim, generator=gen)
        k = torch.randn(dim, generator=gen)
        results.append(torch.dot(q, k))
    results = torch.stack(results)
    return results.var().item(), (results / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        scores = attention_scores(queries, keys)
        weights = scaled_attention_weights(scores, keys.shape[-1])
        return context_vectors(weights, values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        weights = scaled_attention_weights(attention_scores(queries, keys), keys.shape[-1])
        return context_vectors(weights, values)


# %% step: masking

def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    masked = attn_weights.masked_fill(causal_mask(n), 0.0)
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    masked = scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf)
    return scaled_attention_weights(masked, d_k)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.Dropout(p)(attn_weights)


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
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = attention_scores(queries, keys).masked_fill(self.mask[:n, :n], -torch.inf)
        weights = self.dropout(scaled_attention_weights(scores, keys.shape[-1]))
        return context_vectors(weights, values)


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        queries = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        scores = attention_scores(queries, keys).masked_fill(self.mask[:n, :n], -torch.inf)
        weights = self.dropout(scaled_attention_weights(scores, self.head_dim))
        context = context_vectors(weights, values).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(context)
