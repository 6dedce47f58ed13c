import math

import torch
from torch import nn


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("num_heads must divide d_out")
        self.n_heads = num_heads
        self.dh = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.proj = nn.Linear(d_out, d_out)
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("causal_buf", _mask_above_diag(context_length))

    def forward(self, x):
        bsz, seq, _ = x.shape
        split = lambda t: t.view(bsz, seq, self.n_heads, self.dh).permute(0, 2, 1, 3)
        qh = split(self.W_query(x))
        kh = split(self.W_key(x))
        vh = split(self.W_value(x))
        sc = attention_scores(qh, kh).masked_fill(self.causal_buf[:seq, :seq], float("-inf"))
        pr = self.attn_dropout(scaled_attention_weights(sc, self.dh))
        out = context_vectors(pr, vh).permute(0, 2, 1, 3).reshape(bsz, seq, self.n_heads * self.dh)
        return self.proj(out)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("causal_buf", _mask_above_diag(context_length))

    def forward(self, x):
        seq = x.shape[1]
        qm, km, vm = self.W_query(x), self.W_key(x), self.W_value(x)
        sc = attention_scores(qm, km).masked_fill(self.causal_buf[:seq, :seq], float("-inf"))
        pr = self.attn_dropout(scaled_attention_weights(sc, km.shape[-1]))
        return context_vectors(pr, vm)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        return torch.cat([one(x) for one in self.heads], dim=-1)


# %% step: projection


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def init_qkv_weights(d_in, d_out):
    mats = [torch.rand(d_in, d_out) for _ in range(3)]
    return mats[0], mats[1], mats[2]


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.permute(*range(keys.dim() - 2), keys.dim() - 1, keys.dim() - 2))


def scaled_attention_weights(scores, d_k):
    denom = (d_k + 1) ** 0.5
    return torch.softmax(scores / denom, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator().manual_seed(seed)
    qs = torch.randn(num_trials, dim, generator=rng)
    ks = torch.randn(num_trials, dim, generator=rng)
    raw = torch.mul(qs, ks).sum(dim=-1)
    scaled = raw * dim ** -0.5
    return raw.var().item(), scaled.var().item()


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        qm, km, vm = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(qm, km), km.shape[-1]), vm)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        qm, km, vm = project(x, self.W_query, self.W_key, self.W_value)
        sc = attention_scores(qm, km)
        return context_vectors(scaled_attention_weights(sc, km.shape[-1]), vm)


# %% step: masking


def _mask_above_diag(n, device=None):
    return torch.ones(n, n, dtype=torch.bool, device=device).triu(1)


def causal_mask(context_length):
    return _mask_above_diag(context_length)


def causal_attention_weights(scores, d_k):
    sc = scores.masked_fill(_mask_above_diag(scores.shape[-1], scores.device), float("-inf"))
    return scaled_attention_weights(sc, d_k)


def mask_and_renormalize(attn_weights):
    size = attn_weights.shape[-1]
    w = attn_weights.masked_fill(_mask_above_diag(size, attn_weights.device), 0.0)
    return w / w.sum(dim=-1, keepdim=True)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if training:
        return nn.functional.dropout(attn_weights, p=p, training=True)
    return attn_weights
