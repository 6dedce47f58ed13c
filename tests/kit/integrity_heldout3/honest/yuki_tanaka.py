import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    return x.matmul(W_query), x.matmul(W_key), x.matmul(W_value)


# %% step: scaling


def attention_scores(queries, keys):
    return queries.matmul(keys.swapaxes(-1, -2))


def scaled_attention_weights(scores, d_k):
    return (scores * (1.0 / math.sqrt(d_k))).softmax(-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    # TODO come back to this one
    pass


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        w = scaled_attention_weights(attention_scores(q, k), k.shape[-1])
        return context_vectors(w, v)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = scaled_attention_weights(attention_scores(q, k), k.shape[-1])
        return context_vectors(w, v)


# %% step: masking


def causal_mask(context_length):
    r = torch.arange(context_length)
    return r[None, :] > r[:, None]


def mask_and_renormalize(attn_weights):
    m = causal_mask(attn_weights.shape[-1]).to(attn_weights.device)
    a = attn_weights * (~m)
    return a / a.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    m = causal_mask(scores.shape[-1]).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(m, -math.inf), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    # TODO: Implement for Step 4 (dropout).
    raise NotImplementedError("dropout: attention_dropout is not implemented yet")


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        t = x.shape[-2]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = attention_scores(q, k).masked_fill(self.mask[:t, :t], -math.inf)
        w = self.dropout(scaled_attention_weights(s, k.shape[-1]))
        return context_vectors(w, v)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for i in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], -1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        t = x.shape[-2]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        outs = []
        # slice each head's columns out of the big projections
        for h in range(self.num_heads):
            cols = slice(h * self.head_dim, (h + 1) * self.head_dim)
            s = attention_scores(q[..., cols], k[..., cols])
            s = s.masked_fill(self.mask[:t, :t], -math.inf)
            w = self.dropout(scaled_attention_weights(s, self.head_dim))
            outs.append(context_vectors(w, v[..., cols]))
        return self.out_proj(torch.cat(outs, -1))
