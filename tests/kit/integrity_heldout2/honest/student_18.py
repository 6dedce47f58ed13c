import math
import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    wq, wk, wv = torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    return (torch.einsum("...nd,de->...ne", x, W_query),
            torch.einsum("...nd,de->...ne", x, W_key),
            torch.einsum("...nd,de->...ne", x, W_value))


def attention_scores(queries, keys):
    return torch.einsum("...id,...jd->...ij", queries, keys)


def scaled_attention_weights(scores, d_k):
    return (scores / math.sqrt(d_k)).softmax(-1)


def context_vectors(attn_weights, values):
    return torch.einsum("...ij,...jd->...id", attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(num_trials, dim, generator=g, dtype=torch.float64) for _ in range(2))
    s = torch.einsum("td,td->t", q, k)
    return s.var(correction=0).item(), (s / math.sqrt(dim)).var(correction=0).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        a = torch.einsum("id,jd->ij", q, k).div(math.sqrt(k.shape[-1])).softmax(-1)
        return torch.einsum("ij,jd->id", a, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        a = torch.einsum("id,jd->ij", q, k).div(math.sqrt(k.shape[-1])).softmax(-1)
        return torch.einsum("ij,jd->id", a, v)


def causal_mask(context_length):
    return torch.ones(context_length, context_length, dtype=torch.bool).triu(diagonal=1)


def mask_and_renormalize(attn_weights):
    w = attn_weights.tril()
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    m = causal_mask(scores.shape[-1]).to(scores.device)
    return scores.masked_fill(m, -math.inf).div(math.sqrt(d_k)).softmax(-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return attn_weights.mul(0)
    return attn_weights.mul(torch.rand_like(attn_weights).ge(p)).div(1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(diagonal=1))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.einsum("bid,bjd->bij", q, k)
        s = s.masked_fill(self.mask[:n, :n].bool(), -math.inf)
        a = self.dropout(s.div(math.sqrt(k.shape[-1])).softmax(-1))
        return torch.einsum("bij,bjd->bid", a, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                   for _ in range(num_heads))

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.h = num_heads
        self.dh = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(diagonal=1))

    def forward(self, x):
        b, n, _ = x.shape
        q = self.W_query(x).view(b, n, self.h, self.dh)
        k = self.W_key(x).view(b, n, self.h, self.dh)
        v = self.W_value(x).view(b, n, self.h, self.dh)
        s = torch.einsum("bihd,bjhd->bhij", q, k)
        s = s.masked_fill(self.mask[:n, :n].bool(), -math.inf)
        a = self.dropout(s.div(math.sqrt(self.dh)).softmax(-1))
        o = torch.einsum("bhij,bjhd->bihd", a, v).reshape(b, n, self.h * self.dh)
        return self.out_proj(o)
