# Lena Fischer
# Structure borrowed from "The Annotated Transformer": one attention() function
# that everything else calls, and a subsequent_mask() helper.

import copy
import math

import torch
import torch.nn as nn


def subsequent_mask(size):
    "Mask out subsequent positions (True = allowed to attend)."
    attn_shape = (size, size)
    upper = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return upper == 0


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


def clones(module, N):
    "Produce N identical layers."
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


def init_qkv_weights(d_in, d_out):
    return tuple(torch.rand(d_in, d_out) for _ in range(3))


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(num_trials, 1, dim, generator=g)
    key = torch.randn(num_trials, 1, dim, generator=g)
    scores = torch.matmul(query, key.transpose(-2, -1)).flatten()
    return scores.var().item(), (scores / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super(SelfAttention_v1, self).__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        query, key, value = project(x, self.W_query, self.W_key, self.W_value)
        return attention(query, key, value)[0]


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super(SelfAttention_v2, self).__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return attention(self.W_query(x), self.W_key(x), self.W_value(x))[0]


def causal_mask(context_length):
    return ~subsequent_mask(context_length)


def mask_and_renormalize(attn_weights):
    allowed = subsequent_mask(attn_weights.size(-1)).to(attn_weights.device)
    p_attn = attn_weights * allowed
    return p_attn / p_attn.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    allowed = subsequent_mask(scores.size(-1)).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(allowed == 0, float("-inf")), d_k)


def attention_dropout(attn_weights, p, training=True):
    layer = nn.Dropout(p)
    layer.train(training)
    return layer(attn_weights)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super(CausalAttention, self).__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", subsequent_mask(context_length))
        self.attn = None

    def forward(self, x):
        n = x.size(1)
        out, self.attn = attention(self.W_query(x), self.W_key(x), self.W_value(x),
                                   mask=self.mask[:n, :n], dropout=self.dropout)
        return out


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super(MultiHeadAttentionWrapper, self).__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


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
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", subsequent_mask(context_length))
        self.attn = None

    def forward(self, x):
        nbatches, n = x.size(0), x.size(1)
        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin in (self.W_query, self.W_key, self.W_value)
        ]
        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(query, key, value, mask=self.mask[:n, :n], dropout=self.dropout)
        # 3) "Concat" using a view and apply a final linear.
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.out_proj(x)
