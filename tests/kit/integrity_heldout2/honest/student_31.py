import math
import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)
    products = torch.stack([torch.dot(q[i], k[i]) for i in range(num_trials)])
    return products.var(unbiased=False).item(), (products / math.sqrt(dim)).var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        scores = attention_scores(queries, keys)
        return context_vectors(scaled_attention_weights(scores, keys.shape[1]), values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = attention_scores(queries, keys)
        return context_vectors(scaled_attention_weights(scores, keys.shape[1]), values)


def causal_mask(context_length):
    lower = torch.tril(torch.ones(context_length, context_length))
    return lower == 0


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    lower = torch.tril(torch.ones(n, n, device=attn_weights.device))
    w = attn_weights.masked_fill(lower == 0, 0.0)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    lower = torch.tril(torch.ones(n, n, device=scores.device))
    return scaled_attention_weights(scores.masked_fill(lower == 0, float("-inf")), d_k)


def attention_dropout(attn_weights, p, training=True):
    if training:
        if p == 1:
            return torch.zeros_like(attn_weights)
        mask = torch.rand(attn_weights.shape, device=attn_weights.device) >= p
        attn_weights = attn_weights * mask / (1 - p)
    return attn_weights


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)) == 0)

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = attention_scores(queries, keys)
        scores = scores.masked_fill(self.mask[:n, :n], float("-inf"))
        weights = self.dropout(scaled_attention_weights(scores, keys.shape[-1]))
        return context_vectors(weights, values)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for i in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=qkv_bias))

    def forward(self, x):
        outs = []
        for head in self.heads:
            outs.append(head(x))
        return torch.cat(outs, dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be a multiple of num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)) == 0)

    def forward(self, x):
        batch, n, _ = x.shape
        queries = self.W_query(x).reshape(batch, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        keys = self.W_key(x).reshape(batch, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        values = self.W_value(x).reshape(batch, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        scores = attention_scores(queries, keys).masked_fill(self.mask[:n, :n], float("-inf"))
        weights = self.dropout(scaled_attention_weights(scores, self.head_dim))
        out = context_vectors(weights, values).permute(0, 2, 1, 3).reshape(batch, n, self.d_out)
        return self.out_proj(out)
