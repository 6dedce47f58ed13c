"""Attention exercise. I keep the hyper-parameters in a small dataclass."""
import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class AttnConfig:
    d_in: int
    d_out: int
    context_length: int = 0
    dropout: float = 0.0
    num_heads: int = 1
    qkv_bias: bool = False

    @property
    def head_dim(self) -> int:
        return self.d_out // self.num_heads

    def check(self):
        if self.d_out % self.num_heads:
            raise ValueError("d_out must be a multiple of num_heads")
        return self


@dataclass(frozen=True)
class VarianceResult:
    before: float
    after: float

    def as_tuple(self):
        return (self.before, self.after)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    cfg = AttnConfig(d_in, d_out)
    W_query = torch.rand(cfg.d_in, cfg.d_out)
    W_key = torch.rand(cfg.d_in, cfg.d_out)
    W_value = torch.rand(cfg.d_in, cfg.d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return torch.nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    qs = torch.randn(num_trials, dim, generator=gen)
    ks = torch.randn(num_trials, dim, generator=gen)
    dots = torch.einsum("td,td->t", qs, ks)
    result = VarianceResult(before=dots.var().item(), after=(dots / math.sqrt(dim)).var().item())
    return result.as_tuple()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.cfg = AttnConfig(d_in, d_out)
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), self.cfg.d_out), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.cfg = AttnConfig(d_in, d_out, qkv_bias=qkv_bias)
        self.W_query = nn.Linear(self.cfg.d_in, self.cfg.d_out, bias=self.cfg.qkv_bias)
        self.W_key = nn.Linear(self.cfg.d_in, self.cfg.d_out, bias=self.cfg.qkv_bias)
        self.W_value = nn.Linear(self.cfg.d_in, self.cfg.d_out, bias=self.cfg.qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), self.cfg.d_out), v)


# %% step: masking


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    lower = torch.tril(torch.ones(n, n, device=attn_weights.device))
    w = attn_weights * lower
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hide = causal_mask(scores.shape[-1]).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(hide, -torch.inf), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return torch.nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.cfg = AttnConfig(d_in, d_out, context_length, dropout, 1, qkv_bias)
        c = self.cfg
        self.W_query = nn.Linear(c.d_in, c.d_out, bias=c.qkv_bias)
        self.W_key = nn.Linear(c.d_in, c.d_out, bias=c.qkv_bias)
        self.W_value = nn.Linear(c.d_in, c.d_out, bias=c.qkv_bias)
        self.dropout = nn.Dropout(c.dropout)
        self.register_buffer("mask", causal_mask(c.context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], -torch.inf)
        w = self.dropout(scaled_attention_weights(s, self.cfg.d_out))
        return context_vectors(w, v)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.cfg = AttnConfig(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        c = self.cfg
        self.heads = nn.ModuleList(
            [CausalAttention(c.d_in, c.d_out, c.context_length, c.dropout, c.qkv_bias)
             for _ in range(c.num_heads)]
        )

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.cfg = AttnConfig(d_in, d_out, context_length, dropout, num_heads, qkv_bias).check()
        c = self.cfg
        self.W_query = nn.Linear(c.d_in, c.d_out, bias=c.qkv_bias)
        self.W_key = nn.Linear(c.d_in, c.d_out, bias=c.qkv_bias)
        self.W_value = nn.Linear(c.d_in, c.d_out, bias=c.qkv_bias)
        self.out_proj = nn.Linear(c.d_out, c.d_out)
        self.dropout = nn.Dropout(c.dropout)
        self.register_buffer("mask", causal_mask(c.context_length))

    def forward(self, x):
        c = self.cfg
        b, n, _ = x.shape
        shape = (b, n, c.num_heads, c.head_dim)
        q = self.W_query(x).view(*shape).transpose(1, 2)
        k = self.W_key(x).view(*shape).transpose(1, 2)
        v = self.W_value(x).view(*shape).transpose(1, 2)
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], -torch.inf)
        w = self.dropout(scaled_attention_weights(s, c.head_dim))
        out = context_vectors(w, v).transpose(1, 2).contiguous().view(b, n, c.d_out)
        return self.out_proj(out)
