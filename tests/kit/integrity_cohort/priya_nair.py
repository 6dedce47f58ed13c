# Priya Nair -- Attention mechanisms
# Based on my notes from the chapter + d2l.ai's attention chapter.

import math
import torch
from torch import nn
from torch.nn import functional as F


# ------------------------------------------------------------------ helpers

def sequence_mask_upper(n, device=None):
    """Mask for the positions a token must not see."""
    grid = torch.ones((n, n), dtype=torch.bool, device=device)
    return torch.triu(grid)


def split_heads(X, num_heads):
    batch, steps, hidden = X.shape
    X = X.reshape(batch, steps, num_heads, hidden // num_heads)
    return X.permute(0, 2, 1, 3)


def join_heads(X):
    batch, heads, steps, size = X.shape
    return X.permute(0, 2, 1, 3).reshape(batch, steps, heads * size)


# ------------------------------------------------------------------ 1

def init_qkv_weights(d_in, d_out):
    W_query = torch.rand((d_in, d_out))
    W_key = torch.rand((d_in, d_out))
    W_value = torch.rand((d_in, d_out))
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# ------------------------------------------------------------------ 2

def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    Q = torch.randn((num_trials, dim), generator=gen, dtype=torch.float64)
    K = torch.randn((num_trials, dim), generator=gen, dtype=torch.float64)
    prods = torch.sum(Q * K, dim=1)
    return torch.var(prods).item(), torch.var(prods / math.sqrt(dim)).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand((d_in, d_out)))
        self.W_key = nn.Parameter(torch.rand((d_in, d_out)))
        self.W_value = nn.Parameter(torch.rand((d_in, d_out)))

    def forward(self, x):
        Q, K, V = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(Q, K), Q.shape[-1]), V)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(Q, K), Q.shape[-1]), V)


# ------------------------------------------------------------------ 3

def causal_mask(context_length):
    return sequence_mask_upper(context_length)


def mask_and_renormalize(attn_weights):
    hidden = sequence_mask_upper(attn_weights.shape[-1], attn_weights.device)
    W = attn_weights.masked_fill(hidden, 0.0)
    return W / W.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hidden = sequence_mask_upper(scores.shape[-1], scores.device)
    return F.softmax(scores.masked_fill(hidden, -float("inf")) / math.sqrt(d_k), dim=-1)


# ------------------------------------------------------------------ 4

def attention_dropout(attn_weights, p, training=True):
    if training:
        return F.dropout(attn_weights, p=p, training=True)
    return attn_weights


# ------------------------------------------------------------------ 5

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        steps = x.shape[1]
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        S = attention_scores(Q, K).masked_fill(self.mask.bool()[:steps, :steps], -float("inf"))
        return self.dropout(scaled_attention_weights(S, K.shape[-1])) @ V


# ------------------------------------------------------------------ 6

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# ------------------------------------------------------------------ 7

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        steps = x.shape[1]
        Q = split_heads(self.W_query(x), self.num_heads)
        K = split_heads(self.W_key(x), self.num_heads)
        V = split_heads(self.W_value(x), self.num_heads)
        S = attention_scores(Q, K).masked_fill(self.mask.bool()[:steps, :steps], -float("inf"))
        A = self.dropout(scaled_attention_weights(S, K.shape[-1]))
        return self.out_proj(join_heads(A @ V))
