import math
import torch
from torch import nn


# %% step: projection

def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    q = x @ W_query
    k = x @ W_key
    v = x @ W_value
    return q, k, v


# %% step: scaling

def attention_scores(queries, keys):
    return torch.matmul(queries, torch.transpose(keys, -1, -2))


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores * d_k ** -0.5, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator()
    gen = gen.manual_seed(seed)
    pairs = torch.randn(num_trials, 2, dim, generator=gen)
    q = pairs[:, 0]
    k = pairs[:, 1]
    qk = (q * k).sum(-1)
    before = torch.var(qk)
    after = torch.var(qk * dim ** -0.5)
    return before.item(), after.item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
        a = torch.softmax((q @ k.T) * k.shape[1] ** -0.5, dim=-1)
        return a @ v


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        a = torch.softmax((q @ k.T) * k.shape[1] ** -0.5, dim=-1)
        return a @ v


# %% step: masking

def causal_mask(context_length):
    visible = torch.tril(torch.ones(context_length, context_length)).bool()
    return torch.logical_not(visible)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    keep = torch.tril(torch.ones(n, n, device=attn_weights.device)).bool()
    w = torch.where(keep, attn_weights, torch.zeros_like(attn_weights))
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    keep = torch.tril(torch.ones(n, n, device=scores.device)).bool()
    s = torch.where(keep, scores, torch.full_like(scores, float("-inf")))
    return torch.softmax(s * d_k ** -0.5, dim=-1)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if training is False:
        return attn_weights
    d = nn.Dropout(p)
    d.train()
    return d(attn_weights)


# %% step: causal_attention

class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        n = x.shape[1]
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        s = torch.bmm(q, k.transpose(1, 2))
        s = torch.where(self.mask[:n, :n], torch.full_like(s, float("-inf")), s)
        a = torch.softmax(s * k.shape[-1] ** -0.5, dim=-1)
        a = self.dropout(a)
        return torch.bmm(a, v)


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        ])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=2)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "bad num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        B, T, _ = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.W_query(x).reshape(B, T, H, D).transpose(1, 2)
        k = self.W_key(x).reshape(B, T, H, D).transpose(1, 2)
        v = self.W_value(x).reshape(B, T, H, D).transpose(1, 2)
        s = q @ k.transpose(-1, -2)
        s = torch.where(self.mask[:T, :T], torch.full_like(s, float("-inf")), s)
        a = self.dropout(torch.softmax(s * D ** -0.5, dim=-1))
        y = (a @ v).transpose(1, 2).reshape(B, T, self.d_out)
        return self.out_proj(y)
