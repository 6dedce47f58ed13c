"""
Samir Haddad -- attention.

I followed Peter Bloem's "Transformers from scratch" post: batched matrix
multiplication with torch.bmm, heads folded into the batch dimension.
"""
import math

import torch
from torch import nn
import torch.nn.functional as F


def mask_(matrices, maskval=0.0, mask_diagonal=True):
    """Masks out all values in the given batch of matrices where i <= j holds, in place."""
    h, w = matrices.size(-2), matrices.size(-1)
    indices = torch.triu_indices(h, w, offset=0 if mask_diagonal else 1)
    matrices[..., indices[0], indices[1]] = maskval


def init_qkv_weights(d_in, d_out):
    tokeys_first = False  # the chapter draws query, key, value in this order
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    queries = torch.randn(num_trials, 1, dim, generator=g)
    keys = torch.randn(num_trials, dim, 1, generator=g)
    dot = torch.bmm(queries, keys).view(-1)
    return dot.var().item(), (dot / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
        dot = queries @ keys.t() / math.sqrt(keys.size(1))
        return F.softmax(dot, dim=1) @ values


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        dot = queries @ keys.t() / math.sqrt(keys.size(1))
        return F.softmax(dot, dim=1) @ values


def causal_mask(context_length):
    m = torch.zeros(context_length, context_length, dtype=torch.bool)
    mask_(m, maskval=True, mask_diagonal=False)
    return m


def mask_and_renormalize(attn_weights):
    dot = attn_weights.clone()
    mask_(dot, maskval=0.0, mask_diagonal=False)
    return dot / dot.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    dot = scores.clone()
    mask_(dot, maskval=float('-inf'), mask_diagonal=False)
    return F.softmax(dot / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return F.dropout(attn_weights, p=p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, t, e = x.size()
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        dot = torch.bmm(queries, keys.transpose(1, 2))
        dot = dot / math.sqrt(keys.size(-1))
        dot = dot.masked_fill(self.mask[:t, :t], float('-inf'))
        dot = self.dropout(F.softmax(dot, dim=2))
        return torch.bmm(dot, values)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, f'Embedding dimension ({d_out}) should be divisible by nr. of heads ({num_heads})'
        self.emb = d_out
        self.heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, t, e = x.size()
        h = self.heads
        s = self.emb // h
        keys = self.W_key(x).view(b, t, h, s)
        queries = self.W_query(x).view(b, t, h, s)
        values = self.W_value(x).view(b, t, h, s)
        # fold heads into the batch dimension
        keys = keys.transpose(1, 2).contiguous().view(b * h, t, s)
        queries = queries.transpose(1, 2).contiguous().view(b * h, t, s)
        values = values.transpose(1, 2).contiguous().view(b * h, t, s)
        dot = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(s)
        dot = dot.masked_fill(self.mask[:t, :t], float('-inf'))
        dot = self.dropout(F.softmax(dot, dim=2))
        out = torch.bmm(dot, values).view(b, h, t, s)
        # swap h, t back, unify heads
        out = out.transpose(1, 2).contiguous().view(b, t, s * h)
        return self.out_proj(out)
