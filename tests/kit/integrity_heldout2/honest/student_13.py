import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    W_q = torch.rand(d_in, d_out)
    W_k = torch.rand(d_in, d_out)
    W_v = torch.rand(d_in, d_out)
    return W_q, W_k, W_v


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    return nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    Q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    K = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    scores = torch.bmm(Q.unsqueeze(1), K.unsqueeze(-1)).reshape(-1)
    return float(scores.var(unbiased=False)), float((scores / math.sqrt(dim)).var(unbiased=False))


#@save
def masked_softmax(X, mask):
    """Perform softmax operation by masking elements on the last axis.

    `mask` is True where the entry is hidden; hidden entries get a very large
    negative value, so their exponentials are 0."""
    if mask is None:
        return nn.functional.softmax(X, dim=-1)
    X = X.masked_fill(mask, -1e6)
    return nn.functional.softmax(X, dim=-1)


#@save
def dot_product_attention(queries, keys, values, mask=None, dropout=None):
    """Scaled dot product attention (d2l style, batched with bmm)."""
    d = queries.shape[-1]
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
    attention_weights = masked_softmax(scores, mask)
    if dropout is not None:
        attention_weights = dropout(attention_weights)
    return torch.bmm(attention_weights, values)


#@save
def transpose_qkv(X, num_heads):
    """Transposition for parallel computation of multiple attention heads."""
    # Shape of input X: (batch_size, no. of queries or key-value pairs, num_hiddens).
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    # Shape of output X: (batch_size, num_heads, no. of queries or key-value pairs, num_hiddens / num_heads)
    X = X.permute(0, 2, 1, 3)
    # Shape of output: (batch_size * num_heads, no. of queries or key-value pairs, num_hiddens / num_heads)
    return X.reshape(-1, X.shape[2], X.shape[3])


#@save
def transpose_output(X, num_heads):
    """Reverse the operation of transpose_qkv."""
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x.unsqueeze(0), self.W_query, self.W_key, self.W_value)
        return dot_product_attention(queries, keys, values).squeeze(0)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        x = x.unsqueeze(0)
        out = dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))
        return out.squeeze(0)


def causal_mask(context_length):
    return torch.triu(torch.ones((context_length, context_length), dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights):
    mask = causal_mask(attn_weights.shape[-1]).to(attn_weights.device)
    attn_weights = attn_weights.masked_fill(mask, 0)
    return attn_weights / attn_weights.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    mask = causal_mask(scores.shape[-1]).to(scores.device)
    return masked_softmax(scores.masked_fill(mask, float("-inf")) / math.sqrt(d_k), None)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    mask = (torch.rand(attn_weights.shape) > p).float()
    return mask * attn_weights / (1.0 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, X):
        num_steps = X.shape[1]
        return dot_product_attention(self.W_query(X), self.W_key(X), self.W_value(X),
                                     self.mask[:num_steps, :num_steps], self.dropout)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, X):
        return torch.cat([head(X) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    """Multi-head attention."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, X):
        num_steps = X.shape[1]
        # Shape of queries, keys, or values: (batch_size * num_heads, no. of queries or key-value pairs,
        # num_hiddens / num_heads)
        queries = transpose_qkv(self.W_query(X), self.num_heads)
        keys = transpose_qkv(self.W_key(X), self.num_heads)
        values = transpose_qkv(self.W_value(X), self.num_heads)
        # Shape of output: (batch_size * num_heads, no. of queries, num_hiddens / num_heads)
        output = dot_product_attention(queries, keys, values, self.mask[:num_steps, :num_steps], self.dropout)
        # Shape of output_concat: (batch_size, no. of queries, num_hiddens)
        output_concat = transpose_output(output, self.num_heads)
        return self.out_proj(output_concat)
