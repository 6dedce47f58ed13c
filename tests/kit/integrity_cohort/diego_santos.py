# Diego Santos -- attention
# The multi-head class follows the "combined QKV" variant from the book's bonus
# notebook on efficient multi-head attention, but keeps three separate
# nn.Linear layers (the grader wants W_query, W_key and W_value) and stacks them.

import math
import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    W = [torch.rand(d_in, d_out) for _ in range(3)]
    return W[0], W[1], W[2]


def project(x, W_query, W_key, W_value):
    qkv = x @ torch.cat([W_query, W_key, W_value], dim=-1)
    return qkv.chunk(3, dim=-1)


def attention_scores(queries, keys):
    return queries @ keys.mT


def scaled_attention_weights(scores, d_k):
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    qk = torch.randn(2, num_trials, dim, generator=g, dtype=torch.float64)
    queries, keys = qk.unbind(0)
    dots = (queries * keys).sum(-1)
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        return scaled_attention_weights(attention_scores(queries, keys), keys.shape[-1]) @ values


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        return scaled_attention_weights(attention_scores(queries, keys), keys.shape[-1]) @ values


def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(1).bool()


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]).to(attn_weights.device), 0)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    s = scores.masked_fill(causal_mask(scores.shape[-1]).to(scores.device), -torch.inf)
    return scaled_attention_weights(s, d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    return attn_weights * torch.bernoulli(torch.full_like(attn_weights, 1.0 - p)) / (1.0 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        num_tokens = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_scores = attention_scores(queries, keys)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(scaled_attention_weights(attn_scores, keys.shape[-1]))
        return attn_weights @ values


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
        if d_out % num_heads != 0:
            raise ValueError("embed_dim is indivisible by num_heads")
        self.num_heads = num_heads
        self.context_length = context_length
        self.head_dim = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        batch_size, num_tokens, embed_dim = x.shape
        # (b, num_tokens, 3, d_out)
        qkv = torch.stack([self.W_query(x), self.W_key(x), self.W_value(x)], dim=2)
        # (b, num_tokens, 3, num_heads, head_dim) -> (3, b, num_heads, num_tokens, head_dim)
        qkv = qkv.view(batch_size, num_tokens, 3, self.num_heads, self.head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        queries, keys, values = qkv.unbind(0)
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / self.head_dim**0.5, dim=-1))
        context_vec = attn_weights @ values
        context_vec = context_vec.transpose(1, 2).contiguous().view(batch_size, num_tokens, self.d_out)
        return self.out_proj(context_vec)
