import math

import torch
import torch.nn as nn


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


def subsequent_mask(size):
    "Mask out subsequent positions."
    attn_shape = (1, size, size)
    subsequent = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return subsequent == 0


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return [torch.matmul(x, w) for w in (W_query, W_key, W_value)]


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    scores = (q * k).sum(-1)
    return scores.var(unbiased=False).item(), (scores / math.sqrt(dim)).var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super(SelfAttention_v1, self).__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        query, key, value = [torch.matmul(x, w) for w in (self.W_query, self.W_key, self.W_value)]
        x, self.attn = attention(query, key, value)
        return x


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super(SelfAttention_v2, self).__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        query, key, value = [lin(x) for lin in (self.W_query, self.W_key, self.W_value)]
        x, self.attn = attention(query, key, value)
        return x


def causal_mask(context_length):
    return ~subsequent_mask(context_length)[0]


def mask_and_renormalize(attn_weights):
    keep = subsequent_mask(attn_weights.size(-1))[0].to(attn_weights.device)
    w = attn_weights * keep
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    mask = subsequent_mask(scores.size(-1))[0].to(scores.device)
    scores = scores.masked_fill(mask == 0, -1e9)
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    keep = (torch.rand_like(attn_weights) >= p).type_as(attn_weights)
    return attn_weights * keep / (1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super(CausalAttention, self).__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(p=dropout)
        self.attn = None
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        n = x.size(1)
        query, key, value = [lin(x) for lin in (self.W_query, self.W_key, self.W_value)]
        keep = self.mask[:n, :n] == 0
        x, self.attn = attention(query, key, value, mask=keep.unsqueeze(0), dropout=self.dropout)
        return x


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super(MultiHeadAttentionWrapper, self).__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        "Take in model size and number of heads."
        super(MultiHeadAttention, self).__init__()
        assert d_out % num_heads == 0
        # We assume d_v always equals d_k
        self.d_k = d_out // num_heads
        self.h = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        nbatches, n = x.size(0), x.size(1)
        # Same mask applied to all h heads.
        mask = (self.mask[:n, :n] == 0).unsqueeze(0).unsqueeze(1)

        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin in (self.W_query, self.W_key, self.W_value)
        ]

        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)

        # 3) "Concat" using a view and apply a final linear.
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.out_proj(x)
