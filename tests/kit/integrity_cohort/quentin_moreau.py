"""Quentin Moreau -- attention.

Organised like the UvA deep learning course's Transformer tutorial: a
scaled_dot_product() function returning (values, attention), and
reshape + permute(0, 2, 1, 3) to split heads.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product(q, k, v, mask=None, dropout=None):
    d_k = q.size()[-1]
    attn_logits = torch.matmul(q, k.transpose(-2, -1))
    attn_logits = attn_logits / math.sqrt(d_k)
    if mask is not None:
        attn_logits = attn_logits.masked_fill(mask == 0, -9e15)
    attention = F.softmax(attn_logits, dim=-1)
    if dropout is not None:
        attention = dropout(attention)
    values = torch.matmul(attention, v)
    return values, attention


def expand_mask(mask):
    """Broadcast a (T, T) mask over any leading batch / head axes."""
    assert mask.ndim >= 2, "Mask must be at least 2-dimensional with seq_length x seq_length"
    while mask.ndim < 4:
        mask = mask.unsqueeze(0)
    return mask


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator()
    g.manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    attn_logits = (q * k).sum(dim=-1)
    return attn_logits.var().item(), (attn_logits / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        values, _ = scaled_dot_product(x @ self.W_query, x @ self.W_key, x @ self.W_value)
        return values


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        values, _ = scaled_dot_product(self.W_query(x), self.W_key(x), self.W_value(x))
        return values


def causal_mask(context_length):
    return torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)).logical_not()


def mask_and_renormalize(attn_weights):
    keep = torch.tril(torch.ones_like(attn_weights))
    masked = attn_weights * keep
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    seq_length = scores.size(-1)
    allowed = torch.tril(torch.ones(seq_length, seq_length, device=scores.device))
    attn_logits = scores.masked_fill(allowed == 0, float("-inf")) / math.sqrt(d_k)
    return F.softmax(attn_logits, dim=-1)


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p=p, training=training)


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        seq_length = x.size(1)
        values, attention = scaled_dot_product(self.W_query(x), self.W_key(x), self.W_value(x),
                                               mask=self.mask[:seq_length, :seq_length],
                                               dropout=self.dropout)
        return values


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "Embedding dimension must be 0 modulo number of heads."
        self.embed_dim = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x, return_attention=False):
        batch_size, seq_length, _ = x.size()
        q = self.W_query(x).reshape(batch_size, seq_length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(batch_size, seq_length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.W_value(x).reshape(batch_size, seq_length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        mask = expand_mask(self.mask[:seq_length, :seq_length])
        values, attention = scaled_dot_product(q, k, v, mask=mask, dropout=self.dropout)
        values = values.permute(0, 2, 1, 3)  # [Batch, SeqLen, Head, Dims]
        values = values.reshape(batch_size, seq_length, self.embed_dim)
        o = self.out_proj(values)
        if return_attention:
            return o, attention
        return o
