import math

import torch
import torch.nn as nn


def _neg(dtype):
    # most negative finite number: avoids NaNs if a whole row were masked
    return torch.finfo(dtype).min


# %% step: projection

def init_qkv_weights(d_in, d_out):
    query_w = torch.rand(d_in, d_out)
    key_w = torch.rand(d_in, d_out)
    value_w = torch.rand(d_in, d_out)
    return query_w, key_w, value_w


def project(x, W_query, W_key, W_value):
    q = torch.tensordot(x, W_query, dims=([x.dim() - 1], [0]))
    k = torch.tensordot(x, W_key, dims=([x.dim() - 1], [0]))
    v = torch.tensordot(x, W_value, dims=([x.dim() - 1], [0]))
    return q, k, v


# %% step: scaling

def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores * (1.0 / math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    d = (q * k).sum(-1)
    var_raw = torch.var(d, correction=1)
    var_scaled = torch.var(d / math.sqrt(dim), correction=1)
    return float(var_raw), float(var_scaled)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.size(-1)), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.size(-1)), v)


# %% step: masking

def causal_mask(context_length):
    return torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)).logical_not()


def mask_and_renormalize(attn_weights):
    keep = causal_mask(attn_weights.size(-1)).logical_not().to(attn_weights.device)
    w = attn_weights * keep
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hide = causal_mask(scores.size(-1)).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(hide, float("-inf")), d_k)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    layer = nn.Dropout(p)
    layer.training = training
    return layer(attn_weights)


# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("causal", causal_mask(context_length), persistent=False)
        self.inv_scale = 1.0 / math.sqrt(d_out)

    def forward(self, x):
        L = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.matmul(q, k.transpose(-2, -1)) * self.inv_scale
        s = s.masked_fill(self.causal[:L, :L], _neg(s.dtype))
        a = self.attn_drop(torch.softmax(s, dim=-1))
        return torch.matmul(a, v)


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([m(x) for m in self.heads], dim=-1)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("causal", causal_mask(context_length), persistent=False)
        self.inv_scale = 1.0 / math.sqrt(self.head_dim)

    def forward(self, x):
        B, L, _ = x.size()
        q = self.W_query(x).view(B, L, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.W_key(x).view(B, L, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.W_value(x).view(B, L, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        s = torch.matmul(q, k.transpose(-2, -1)) * self.inv_scale
        s = s.masked_fill(self.causal[:L, :L], _neg(s.dtype))
        a = self.attn_drop(torch.softmax(s, dim=-1))
        o = torch.matmul(a, v).permute(0, 2, 1, 3).reshape(B, L, -1)
        return self.out_proj(o)
