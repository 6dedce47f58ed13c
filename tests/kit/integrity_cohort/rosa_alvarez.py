# Rosa Alvarez -- attention assignment.
# The multi-head part follows the UvA DL tutorial 6 (permute to put heads first).

import math

import torch
import torch.nn as nn


# Step 1 ----------------------------------------------------------------------

def init_qkv_weights(d_in, d_out):
    result = []
    for role in ["query", "key", "value"]:
        result.append(torch.rand(d_in, d_out))
    return tuple(result)


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# Step 2 ----------------------------------------------------------------------

def attention_scores(queries, keys):
    return queries.matmul(keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / d_k ** 0.5, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    logits = torch.diagonal(q @ k.T)
    return logits.var().item(), (logits / dim ** 0.5).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        attn_logits = attention_scores(q, k)
        attention = scaled_attention_weights(attn_logits, q.size(-1))
        return context_vectors(attention, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_logits = attention_scores(q, k)
        attention = scaled_attention_weights(attn_logits, q.size(-1))
        return context_vectors(attention, v)


# Step 3 ----------------------------------------------------------------------

def causal_mask(context_length):
    upper = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    return upper.to(torch.bool)


def mask_and_renormalize(attn_weights):
    future = causal_mask(attn_weights.size(-1)).to(attn_weights.device)
    attention = attn_weights.masked_fill(future, 0.0)
    attention = attention / attention.sum(dim=-1, keepdim=True)
    return attention


def causal_attention_weights(scores, d_k):
    future = causal_mask(scores.size(-1)).to(scores.device)
    attn_logits = scores.masked_fill(future, float("-inf"))
    return scaled_attention_weights(attn_logits, d_k)


# Step 4 ----------------------------------------------------------------------

def attention_dropout(attn_weights, p, training=True):
    if not training or p <= 0:
        return attn_weights
    bernoulli = (torch.rand_like(attn_weights) > p).to(attn_weights.dtype)
    return attn_weights * bernoulli * (1.0 / (1.0 - p))


# Step 5 ----------------------------------------------------------------------

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        seq_len = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_logits = attention_scores(q, k).masked_fill(self.mask[:seq_len, :seq_len], float("-inf"))
        attention = scaled_attention_weights(attn_logits, k.size(-1))
        values = context_vectors(attention, v)
        return self.dropout(values)  # regularise the output


# Step 6 ----------------------------------------------------------------------

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# Step 7 ----------------------------------------------------------------------

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be 0 modulo num_heads"
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        batch_size, seq_len, embed = x.size()
        heads = lambda t: t.reshape(batch_size, seq_len, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        attn_logits = attention_scores(q, k).masked_fill(self.mask[:seq_len, :seq_len], float("-inf"))
        attention = self.dropout(scaled_attention_weights(attn_logits, self.head_dim))
        values = context_vectors(attention, v).permute(0, 2, 1, 3)
        values = values.reshape(batch_size, seq_len, self.num_heads * self.head_dim)
        return self.out_proj(values)
