import math
import sys

import torch
from torch import nn


MINUS_INFINITY = float("-inf")


# %% step: projection


def init_qkv_weights(d_in, d_out):
    w_query_mat = torch.rand(d_in, d_out)
    w_key_mat = torch.rand(d_in, d_out)
    w_value_mat = torch.rand(d_in, d_out)
    return w_query_mat, w_key_mat, w_value_mat


def project(x, W_query, W_key, W_value):
    return x.matmul(W_query), x.matmul(W_key), x.matmul(W_value)


# %% step: scaling


def attention_scores(queries, keys):
    return queries.matmul(keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    return scores.div(math.sqrt(d_k)).softmax(dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    raw_vals = []
    scaled_vals = []
    for _ in range(num_trials):
        q = torch.randn(dim, generator=g)
        k = torch.randn(dim, generator=g)
        d = q.dot(k).item()
        raw_vals.append(d)
        scaled_vals.append(d / math.sqrt(dim))
    return torch.tensor(raw_vals).var().item(), torch.tensor(scaled_vals).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = x.matmul(self.W_query)
        k = x.matmul(self.W_key)
        v = x.matmul(self.W_value)
        w = q.matmul(k.t()).div(math.sqrt(k.size(-1))).softmax(dim=-1)
        return w.matmul(v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = q.matmul(k.t()).div(math.sqrt(k.size(-1))).softmax(dim=-1)
        return w.matmul(v)


# %% step: masking


def _unused_debug(t):
    print('debug', t.shape, file=sys.stderr)
    return t



def causal_mask(context_length):
    row_idx = torch.arange(context_length).unsqueeze(1)
    col_idx = torch.arange(context_length).unsqueeze(0)
    return torch.where(col_idx > row_idx, True, False)


def mask_and_renormalize(attn_weights):
    hide = causal_mask(attn_weights.size(-1))
    w = torch.where(hide, torch.zeros_like(attn_weights), attn_weights)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hide = causal_mask(scores.size(-1))
    s = torch.where(hide, torch.full_like(scores, MINUS_INFINITY), scores)
    return s.div(math.sqrt(d_k)).softmax(dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    kept = torch.rand_like(attn_weights) >= p
    return torch.where(kept, attn_weights / (1 - p), torch.zeros_like(attn_weights))


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("future", causal_mask(context_length))

    def forward(self, x):
        n = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)

        s = q.matmul(k.transpose(1, 2))

        s = torch.where(self.future[:n, :n], torch.full_like(s, MINUS_INFINITY), s)
        w = self.attn_drop(s.div(math.sqrt(k.size(-1))).softmax(dim=-1))
        return w.matmul(v)


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


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_heads = num_heads
        self.d_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("future", causal_mask(context_length))

    def _reshape_heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, x):
        b, n, _ = x.shape
        q = self._reshape_heads(self.W_query(x))
        k = self._reshape_heads(self.W_key(x))
        v = self._reshape_heads(self.W_value(x))
        s = q.matmul(k.transpose(-1, -2))
        s = torch.where(self.future[:n, :n], torch.full_like(s, MINUS_INFINITY), s)
        w = self.attn_drop(s.div(math.sqrt(self.d_head)).softmax(dim=-1))
        out = w.matmul(v).transpose(1, 2).reshape(b, n, self.n_heads * self.d_head)
        return self.out_proj(out)


if __name__ == "__main__":
    x = torch.rand(2, 4, 3)
    print(MultiHeadAttention(3, 4, 4, 0.1, 2)(x).shape)
