import math

import torch
from torch import nn

# I tried to reuse as much as possible through inheritance.

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
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    samples = torch.randn(num_trials, 2, dim, generator=gen)
    dots = samples[:, 0].mul(samples[:, 1]).sum(-1)
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def qkv(self, x):
        return x @ self.W_query, x @ self.W_key, x @ self.W_value

    def weights(self, q, k):
        return scaled_attention_weights(attention_scores(q, k), k.shape[-1])

    def forward(self, x):
        q, k, v = self.qkv(x)
        return self.weights(q, k) @ v


class SelfAttention_v2(SelfAttention_v1):
    def __init__(self, d_in, d_out, qkv_bias=False):
        nn.Module.__init__(self)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def qkv(self, x):
        return self.W_query(x), self.W_key(x), self.W_value(x)


# %% step: masking


def causal_mask(context_length):
    return torch.ones(context_length, context_length).triu(1) == 1


def mask_and_renormalize(attn_weights):
    tri = torch.ones_like(attn_weights).tril()
    w = attn_weights * tri
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(
        scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    d = nn.Dropout(p)
    return d(attn_weights) if training else attn_weights


# %% step: causal_attention


class CausalAttention(SelfAttention_v2):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def weights(self, q, k):
        n = q.shape[-2]
        s = attention_scores(q, k).masked_fill(self.mask[:n, :n], -torch.inf)
        return self.dropout(scaled_attention_weights(s, k.shape[-1]))


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.out_proj = nn.Linear(d_out, d_out)

    def qkv(self, x):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        q, k, v = super().qkv(x)
        return split(q), split(k), split(v)

    def forward(self, x):
        b, n, _ = x.shape
        ctx = super().forward(x)  # (b, heads, n, head_dim)
        ctx = ctx.transpose(1, 2).contiguous().view(b, n, self.num_heads * self.head_dim)
        return self.out_proj(ctx)
