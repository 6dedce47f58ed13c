"""Kofi Mensah -- attention mechanisms.

Written after reading minGPT (mingpt/model.py). Asserts document the shapes.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    assert W_query.shape == (d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    assert x.shape[-1] == W_query.shape[0], "x must end with d_in features"
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    assert queries.shape[-1] == keys.shape[-1]
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    assert attn_weights.shape[-1] == values.shape[-2]
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator()
    rng.manual_seed(seed)
    dots = []
    for _ in range(num_trials):
        q = torch.randn(dim, generator=rng)
        k = torch.randn(dim, generator=rng)
        dots.append(q @ k)
    dots = torch.stack(dots)
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        assert x.dim() == 2, "one sequence (n, d_in)"
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.size(-1)), v)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        assert x.dim() == 2, "one sequence (n, d_in)"
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.size(-1)), v)


def causal_mask(context_length):
    assert context_length > 0
    return torch.tril(torch.ones(context_length, context_length)) == 0


def mask_and_renormalize(attn_weights):
    n = attn_weights.size(-1)
    att = attn_weights.masked_fill(causal_mask(n).to(attn_weights.device), 0.0)
    return att / att.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.size(-1)
    att = scores.masked_fill(causal_mask(n).to(scores.device), float("-inf"))
    return F.softmax(att / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    assert 0 <= p < 1
    if training:
        return F.dropout(attn_weights, p)
    return attn_weights


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))
        self.context_length = context_length

    def forward(self, x):
        B, T, C = x.size()
        assert T <= self.context_length, "sequence longer than the context"
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        att = self.dropout(F.softmax(att, dim=-1))
        return att @ v


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert num_heads >= 1
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise AssertionError(f"d_out={d_out} is not a multiple of num_heads={num_heads}")
        self.n_head = num_heads
        self.head_dim = d_out // num_heads
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        B, T, C = x.size()
        assert T <= self.context_length
        q = self.W_query(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        att = self.dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, self.n_head * self.head_dim)
        return self.out_proj(y)
