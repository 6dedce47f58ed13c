"""Hugo Lambert - attention mechanisms (chapter 3)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

MASKED = float("-inf")


# ==== masking ====
def causal_mask(context_length):
    return tri_ones(context_length) == 0


def causal_attention_weights(scores, d_k):
    L = scores.size(-1)
    logits = scores.masked_fill(tri_ones(L, scores.device) == 0, MASKED)
    return F.softmax(logits * d_k ** -0.5, dim=-1)


def mask_and_renormalize(attn_weights):
    L = attn_weights.size(-1)
    visible = attn_weights * tri_ones(L, attn_weights.device)
    return visible / visible.sum(dim=-1, keepdim=True)


# ==== projections ====
def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def init_qkv_weights(d_in, d_out):
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)


# ==== dropout ====
def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    u = torch.rand_like(attn_weights)
    return torch.where(u < p, torch.zeros_like(attn_weights), attn_weights / (1 - p))


# ==== scaled dot product ====
def context_vectors(attn_weights, values):
    return attn_weights @ values


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores * d_k ** -0.5, dim=-1)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator().manual_seed(seed)
    lhs = torch.randn(num_trials, dim, generator=rng)
    rhs = torch.randn(num_trials, dim, generator=rng)
    sims = torch.bmm(lhs.unsqueeze(1), rhs.unsqueeze(2)).flatten()
    return sims.var().item(), (sims * dim ** -0.5).var().item()


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        qs, ks, vs = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = qs @ ks.transpose(-2, -1) * ks.size(-1) ** -0.5
        return F.softmax(logits, dim=-1) @ vs


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        qs, ks, vs = x @ self.W_query, x @ self.W_key, x @ self.W_value
        logits = qs @ ks.transpose(-2, -1) * ks.size(-1) ** -0.5
        return F.softmax(logits, dim=-1) @ vs


# ==== modules ====
class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out is not a multiple of num_heads")
        self.heads_count = num_heads
        self.per_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", tri_ones(context_length))

    def to_heads(self, t, B, L):
        return t.view(B, L, self.heads_count, self.per_head).transpose(1, 2)

    def forward(self, x):
        B, L, D = x.shape
        qs = self.to_heads(self.W_query(x), B, L)
        ks = self.to_heads(self.W_key(x), B, L)
        vs = self.to_heads(self.W_value(x), B, L)
        logits = qs @ ks.transpose(-2, -1) * self.per_head ** -0.5
        logits = logits.masked_fill(self.mask[:L, :L] == 0, MASKED)
        weights = self.dropout(F.softmax(logits, dim=-1))
        per_head_out = weights @ vs
        joined = per_head_out.contiguous().view(B, L, self.heads_count * self.per_head)
        return self.out_proj(joined)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", tri_ones(context_length))

    def forward(self, x):
        B, L, D = x.shape
        qs, ks, vs = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = qs @ ks.transpose(-2, -1) * ks.size(-1) ** -0.5
        logits = logits.masked_fill(self.mask[:L, :L] == 0, MASKED)
        weights = self.dropout(F.softmax(logits, dim=-1))
        return weights @ vs


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([one(x) for one in self.heads], dim=-1)


def tri_ones(L, device=None):
    # ones on and below the diagonal
    return torch.tril(torch.ones(L, L, device=device))
