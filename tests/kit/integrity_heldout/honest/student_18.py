"""attention.py -- I lean on torch's fused kernel where I can."""
import math

import torch
import torch.nn.functional as F
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.mT


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn((num_trials, dim), generator=g, dtype=torch.float64)
    k = torch.randn((num_trials, dim), generator=g, dtype=torch.float64)
    dots = torch.linalg.vecdot(q, k)
    before = torch.var(dots).item()
    after = torch.var(dots / math.sqrt(dim)).item()
    return before, after


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)).squeeze(0)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return F.scaled_dot_product_attention(q[None], k[None], v[None])[0]


# %% step: masking


def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(diagonal=1).to(torch.bool)


def mask_and_renormalize(attn_weights):
    n = attn_weights.size(-1)
    w = attn_weights.masked_fill(causal_mask(n).to(attn_weights.device), 0.0)
    return F.normalize(w, p=1, dim=-1)


def causal_attention_weights(scores, d_k):
    n = scores.size(-1)
    masked = scores.masked_fill(causal_mask(n).to(scores.device), -math.inf)
    return F.softmax(masked / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout_p = dropout
        self.context_length = context_length

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return F.scaled_dot_product_attention(
            q, k, v,
            dropout_p=self.dropout_p if self.training else 0.0,
            is_causal=True,
        )


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = dropout
        self.context_length = context_length

    def forward(self, x):
        b, n, _ = x.shape

        def heads(t):
            return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

        q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
        ctx = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=True,
        )
        ctx = ctx.transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(ctx)
