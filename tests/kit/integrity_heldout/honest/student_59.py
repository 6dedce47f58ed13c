import math

import torch
import torch.nn.functional as F
from torch import nn


def init_qkv_weights(d_in, d_out):
    mq = torch.rand(d_in, d_out)
    mk = torch.rand(d_in, d_out)
    mv = torch.rand(d_in, d_out)
    return mq, mk, mv


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries, keys):
    return torch.einsum("...ik,...jk->...ij", queries, keys)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores * (1.0 / math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return torch.einsum("...ij,...jd->...id", attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    qq = [torch.randn(dim, generator=g) for _ in range(num_trials)]
    kk = [torch.randn(dim, generator=g) for _ in range(num_trials)]
    dots = torch.tensor([float(a @ b) for a, b in zip(qq, kk)])
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = torch.matmul(x, self.W_query)
        k = torch.matmul(x, self.W_key)
        v = torch.matmul(x, self.W_value)
        w = F.softmax(torch.matmul(q, k.t()), dim=-1)
        return torch.matmul(w, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        w = F.softmax(torch.matmul(q, k.t()), dim=-1)
        return torch.matmul(w, v)


def causal_mask(context_length):
    i = torch.arange(context_length)
    return i.unsqueeze(0) > i.unsqueeze(1)


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]), 0.0)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    s = scores.masked_fill(causal_mask(scores.shape[-1]), float("-inf"))
    return F.softmax(s * (1.0 / math.sqrt(d_k)), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    keep = torch.rand(attn_weights.shape) >= p
    return torch.where(keep, attn_weights / (1 - p), torch.zeros_like(attn_weights))


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.matmul(q, k.transpose(1, 2)).masked_fill(self.mask[:t, :t], float("-inf"))
        w = self.dropout(F.softmax(s * (1.0 / math.sqrt(k.shape[-1])), dim=-1))
        return torch.matmul(w, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)
        v = self.W_value(x).reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)
        s = torch.matmul(q, k.transpose(-1, -2)).masked_fill(self.mask[:t, :t], float("-inf"))
        w = self.dropout(F.softmax(s, dim=-1))
        o = torch.matmul(w, v).permute(0, 2, 1, 3).reshape(b, t, -1)
        return self.out_proj(o)
