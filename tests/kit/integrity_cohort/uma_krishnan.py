"""Uma Krishnan - attention mechanisms with einsum.

Inspired by Aladdin Persson's "Transformer from scratch" video: einsum for
every product ("energy"), and the heads as an explicit axis.
"""

import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    queries_w = torch.rand(d_in, d_out)
    keys_w = torch.rand(d_in, d_out)
    values_w = torch.rand(d_in, d_out)
    return queries_w, keys_w, values_w


def project(x, W_query, W_key, W_value):
    return (torch.einsum("...i,io->...o", x, W_query),
            torch.einsum("...i,io->...o", x, W_key),
            torch.einsum("...i,io->...o", x, W_value))


def attention_scores(queries, keys):
    return torch.einsum("...qd,...kd->...qk", queries, keys)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / (d_k ** (1 / 2)), dim=-1)


def context_vectors(attn_weights, values):
    return torch.einsum("...qk,...kd->...qd", attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    generator = torch.Generator().manual_seed(seed)
    queries = torch.randn(num_trials, dim, generator=generator)
    keys = torch.randn(num_trials, dim, generator=generator)
    energy = torch.einsum("nd,nd->n", queries, keys)
    return energy.var().item(), (energy / (dim ** (1 / 2))).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super(SelfAttention_v1, self).__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        energy = torch.einsum("qd,kd->qk", queries, keys)
        attention = torch.softmax(energy / (keys.shape[1] ** (1 / 2)), dim=1)
        return torch.einsum("qk,kd->qd", attention, values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super(SelfAttention_v2, self).__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        energy = torch.einsum("qd,kd->qk", queries, keys)
        attention = torch.softmax(energy / (keys.shape[1] ** (1 / 2)), dim=1)
        return torch.einsum("qk,kd->qd", attention, values)


def causal_mask(context_length):
    return torch.tril(torch.ones((context_length, context_length))) == 0


def mask_and_renormalize(attn_weights):
    trg_mask = torch.tril(torch.ones(attn_weights.shape[-2:], device=attn_weights.device))
    attention = attn_weights * trg_mask
    return attention / attention.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    trg_mask = torch.tril(torch.ones(scores.shape[-2:], device=scores.device))
    energy = scores.masked_fill(trg_mask == 0, float("-1e20"))
    return torch.softmax(energy / (d_k ** (1 / 2)), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p=p, training=training)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super(CausalAttention, self).__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        N, query_len, _ = x.shape
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        energy = torch.einsum("nqd,nkd->nqk", [queries, keys])
        energy = energy.masked_fill(self.mask[:query_len, :query_len] == 0, float("-1e20"))
        attention = torch.softmax(energy / (keys.shape[2] ** (1 / 2)), dim=2)
        attention = self.dropout(attention)
        return torch.einsum("nqk,nkd->nqd", [attention, values])


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super(MultiHeadAttentionWrapper, self).__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super(MultiHeadAttention, self).__init__()
        self.embed_size = d_out
        self.heads = num_heads
        self.head_dim = d_out // num_heads
        assert self.head_dim * num_heads == d_out, "Embedding size needs to be divisible by heads"
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        N, query_len, _ = x.shape
        queries = self.W_query(x).reshape(N, query_len, self.heads, self.head_dim)
        keys = self.W_key(x).reshape(N, query_len, self.heads, self.head_dim)
        values = self.W_value(x).reshape(N, query_len, self.heads, self.head_dim)
        # queries shape: (N, query_len, heads, heads_dim), keys shape: (N, key_len, heads, heads_dim)
        energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys])
        energy = energy.masked_fill(self.mask[:query_len, :query_len] == 0, float("-1e20"))
        attention = torch.softmax(energy / (self.head_dim ** (1 / 2)), dim=3)
        attention = self.dropout(attention)
        out = torch.einsum("nhql,nlhd->nqhd", [attention, values]).reshape(N, query_len, self.embed_size)
        return self.out_proj(out)
