import math
import torch
import torch.nn as nn


def clones_of_rand(n, d_in, d_out):
    "n independent (d_in, d_out) uniform draws, in order."
    return [torch.rand(d_in, d_out) for _ in range(n)]


def init_qkv_weights(d_in, d_out):
    W_query, W_key, W_value = clones_of_rand(3, d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return tuple(x.matmul(w) for w in (W_query, W_key, W_value))


def attention_scores(queries, keys):
    return queries.matmul(keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return (scores / math.sqrt(d_k)).softmax(-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    qk = (q * k).sum(-1)
    qk_scaled = qk / math.sqrt(dim)
    return qk.var(unbiased=False).item(), qk_scaled.var(unbiased=False).item()


def attend(query, key, value, mask=None, dropout=None):
    "mask: 1 where the query may look, 0 where it may not."
    scores = query.matmul(key.transpose(-2, -1)) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return p_attn.matmul(value)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return attend(x.matmul(self.W_query), x.matmul(self.W_key), x.matmul(self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return attend(self.W_query(x), self.W_key(x), self.W_value(x))


def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(1).bool()


def mask_and_renormalize(attn_weights):
    lower = torch.ones_like(attn_weights).tril()
    kept = attn_weights * lower
    return kept / kept.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    lower = torch.ones_like(scores).tril()
    return (scores.masked_fill(lower == 0, -1e9) / math.sqrt(d_k)).softmax(-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    keep = torch.rand_like(attn_weights) >= p
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return attn_weights * keep * scale


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(1))

    def forward(self, x):
        t = x.size(-2)
        return attend(self.W_query(x), self.W_key(x), self.W_value(x),
                      mask=1 - self.mask[:t, :t], dropout=self.dropout)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads))

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.h, self.d_k = num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(1))

    def forward(self, x):
        nbatches, t = x.size(0), x.size(1)
        q, k, v = [lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                   for lin in (self.W_query, self.W_key, self.W_value)]
        x = attend(q, k, v, mask=1 - self.mask[:t, :t], dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.out_proj(x)
