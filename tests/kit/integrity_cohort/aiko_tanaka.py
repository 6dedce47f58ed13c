# Aiko Tanaka
# Functional style after Jay Mody's "GPT in 60 lines of NumPy" (picoGPT):
# small pure functions, an additive causal mask of -1e10, heads via split.

import math

import torch
from torch import nn


def softmax(x):
    exp_x = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return exp_x / exp_x.sum(dim=-1, keepdim=True)


def additive_causal_mask(n, dtype=torch.float32, device=None):
    return (1 - torch.tril(torch.ones(n, n, dtype=dtype, device=device))) * -1e10


def attention(q, k, v, mask=None):  # [n_q, d_k], [n_k, d_k], [n_k, d_v] -> [n_q, d_v]
    logits = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        logits = logits + mask
    return softmax(logits) @ v


def init_qkv_weights(d_in, d_out):
    w_q = torch.rand(d_in, d_out)
    w_k = torch.rand(d_in, d_out)
    w_v = torch.rand(d_in, d_out)
    return w_q, w_k, w_v


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return softmax(scores / math.sqrt(d_k))


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    qk = torch.randn(num_trials, 2, dim, generator=g)
    dots = (qk[:, 0] * qk[:, 1]).sum(-1)
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return attention(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return attention(self.W_query(x), self.W_key(x), self.W_value(x))


def causal_mask(context_length):
    return additive_causal_mask(context_length) != 0


def mask_and_renormalize(attn_weights):
    keep = torch.tril(torch.ones_like(attn_weights))
    w = attn_weights * keep
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    return softmax(scores / math.sqrt(d_k) + additive_causal_mask(n, scores.dtype, scores.device))


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    keep = (torch.rand_like(attn_weights) >= p).to(attn_weights.dtype)
    return keep * attn_weights / (1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", additive_causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + self.mask[:n, :n]
        return self.dropout(softmax(logits)) @ v


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("n_head must divide d_out")
        self.n_head = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", additive_causal_mask(context_length))

    def forward(self, x):  # [b, n, d_in] -> [b, n, d_out]
        n = x.shape[1]
        # split into heads: 3 x [b, n, d_out] -> 3 x n_head x [b, n, d_out / n_head]
        qkv_heads = [torch.split(t, t.shape[-1] // self.n_head, dim=-1)
                     for t in (self.W_query(x), self.W_key(x), self.W_value(x))]
        out_heads = []
        for q, k, v in zip(*qkv_heads):
            logits = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + self.mask[:n, :n]
            out_heads.append(self.dropout(softmax(logits)) @ v)
        # merge heads: n_head x [b, n, d_out / n_head] -> [b, n, d_out]
        return self.out_proj(torch.cat(out_heads, dim=-1))
