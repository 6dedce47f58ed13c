import functools
import math
import operator

import torch
from torch import nn

softmax_rows = functools.partial(torch.softmax, dim=-1)
swap = functools.partial(torch.transpose, dim0=-2, dim1=-1)
matmul = operator.matmul


# %% step: projection

def init_qkv_weights(d_in, d_out):
    draw = functools.partial(torch.rand, d_in, d_out)
    return draw(), draw(), draw()


def project(x, W_query, W_key, W_value):
    return tuple(map(functools.partial(matmul, x), (W_query, W_key, W_value)))


# %% step: scaling

def attention_scores(queries, keys):
    return matmul(queries, swap(keys))


def scaled_attention_weights(scores, d_k):
    return softmax_rows(scores / math.sqrt(d_k))


context_vectors = lambda attn_weights, values: matmul(attn_weights, values)  # noqa: E731


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    draw = functools.partial(torch.randn, num_trials, dim, generator=g)
    q, k = draw(), draw()
    dots = torch.mul(q, k).sum(dim=-1)
    return tuple(float(t.var()) for t in (dots, dots / math.sqrt(dim)))


def _pipeline(q, k, v, hide=None, drop=lambda w: w):
    s = attention_scores(q, k)
    if hide is not None:
        s = s.masked_fill(hide, -math.inf)
    return context_vectors(drop(scaled_attention_weights(s, k.shape[-1])), v)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return _pipeline(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        make = functools.partial(nn.Linear, d_in, d_out, bias=qkv_bias)
        self.W_query, self.W_key, self.W_value = make(), make(), make()

    def forward(self, x):
        return _pipeline(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: masking

def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1)


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]), 0.0)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(scores.masked_fill(causal_mask(scores.shape[-1]), -math.inf), d_k)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        make = functools.partial(nn.Linear, d_in, d_out, bias=qkv_bias)
        self.W_query, self.W_key, self.W_value = make(), make(), make()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        return _pipeline(self.W_query(x), self.W_key(x), self.W_value(x),
                         hide=self.mask[:n, :n], drop=self.dropout)


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        make = functools.partial(CausalAttention, d_in, d_out, context_length, dropout, qkv_bias)
        self.heads = nn.ModuleList([make() for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        make = functools.partial(nn.Linear, d_in, d_out, bias=qkv_bias)
        self.W_query, self.W_key, self.W_value = make(), make(), make()
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, d = *x.shape[:2], self.out_proj.out_features
        heads = lambda t: t.view(b, n, self.num_heads, d // self.num_heads).transpose(1, 2)  # noqa: E731
        q, k, v = map(heads, (self.W_query(x), self.W_key(x), self.W_value(x)))
        ctx = _pipeline(q, k, v, hide=self.mask[:n, :n], drop=self.dropout)
        return self.out_proj(ctx.transpose(1, 2).reshape(b, n, d))
