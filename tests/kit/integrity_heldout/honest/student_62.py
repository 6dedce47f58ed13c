import math

import torch
from torch import nn

ROLES = ("query", "key", "value")


# %% step: projection

def init_qkv_weights(d_in, d_out):
    w = {}
    for role in ROLES:
        w[role] = torch.rand(d_in, d_out)
    return w["query"], w["key"], w["value"]


def project(x, W_query, W_key, W_value):
    mats = dict(zip(ROLES, (W_query, W_key, W_value)))
    out = {role: x @ m for role, m in mats.items()}
    return out["query"], out["key"], out["value"]


# %% step: scaling

def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    vals = {"raw": [], "scaled": []}
    for _ in range(num_trials):
        d = torch.randn(dim, generator=g) @ torch.randn(dim, generator=g)
        vals["raw"].append(d)
        vals["scaled"].append(d / math.sqrt(dim))
    return (torch.stack(vals["raw"]).var().item(),
            torch.stack(vals["scaled"]).var().item())


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.shape[-1]), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.proj = nn.ModuleDict({role: nn.Linear(d_in, d_out, bias=qkv_bias) for role in ROLES})

    def forward(self, x):
        q, k, v = (self.proj[role](x) for role in ROLES)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), k.shape[-1]), v)


# %% step: masking

def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(1).bool()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    w = attn_weights * torch.ones(n, n).tril()
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(scores.masked_fill(causal_mask(scores.shape[-1]), float("-inf")), d_k)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.Dropout(p)(attn_weights)


# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.proj = nn.ModuleDict({role: nn.Linear(d_in, d_out, bias=qkv_bias) for role in ROLES})
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = (self.proj[role](x) for role in ROLES)
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], float("-inf"))
        return context_vectors(self.dropout(scaled_attention_weights(s, k.shape[-1])), v)


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleDict({
            f"head_{i}": CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for i in range(num_heads)
        })

    def forward(self, x):
        return torch.cat([self.heads[name](x) for name in self.heads], dim=-1)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.proj = nn.ModuleDict({role: nn.Linear(d_in, d_out, bias=qkv_bias) for role in ROLES})
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (
            self.proj[role](x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
            for role in ROLES
        )
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], float("-inf"))
        ctx = context_vectors(self.dropout(scaled_attention_weights(s, self.head_dim)), v)
        return self.out_proj(ctx.transpose(1, 2).reshape(b, n, self.num_heads * self.head_dim))
