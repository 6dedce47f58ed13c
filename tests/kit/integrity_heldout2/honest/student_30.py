import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    Q = x.matmul(W_query)
    K = x.matmul(W_key)
    V = x.matmul(W_value)
    return Q, K, V


def attention_scores(queries, keys):
    return queries.matmul(keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores.div(math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    G = torch.Generator().manual_seed(seed)
    Q = torch.randn(num_trials, dim, generator=G, dtype=torch.float64)
    K = torch.randn(num_trials, dim, generator=G, dtype=torch.float64)
    S = torch.bmm(Q.view(num_trials, 1, dim), K.view(num_trials, dim, 1)).view(-1)
    S_scaled = S.div(math.sqrt(dim))
    return S.var(unbiased=False).item(), S_scaled.var(unbiased=False).item()


def batched_causal_attention(Q, K, V, hidden, dropout):
    """Q, K, V: (B, T, d) with B possibly batch*heads; `hidden` (T, T) True = masked."""
    S = torch.bmm(Q, K.transpose(1, 2)).div(math.sqrt(K.size(-1)))
    if hidden is not None:
        S = S.masked_fill(hidden.unsqueeze(0), float("-inf"))
    A = F.softmax(S, dim=-1)
    if dropout is not None:
        A = dropout(A)
    return torch.bmm(A, V)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        Q, K, V = project(x.unsqueeze(0), self.W_query, self.W_key, self.W_value)
        return batched_causal_attention(Q, K, V, None, None)[0]


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        X = x.unsqueeze(0)
        return batched_causal_attention(self.W_query(X), self.W_key(X), self.W_value(X), None, None)[0]


def causal_mask(context_length):
    T = context_length
    return torch.ones(T, T).tril().logical_not()


def mask_and_renormalize(attn_weights):
    A = attn_weights.masked_fill(causal_mask(attn_weights.size(-1)), 0.0)
    return A.div(A.sum(dim=-1, keepdim=True))


def causal_attention_weights(scores, d_k):
    S = scores.masked_fill(causal_mask(scores.size(-1)), float("-inf"))
    return F.softmax(S.div(math.sqrt(d_k)), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    keep = torch.rand_like(attn_weights).ge(p).to(attn_weights.dtype)
    return attn_weights.mul(keep).div(1 - p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(diagonal=1))

    def forward(self, x):
        T = x.size(1)
        return batched_causal_attention(self.W_query(x), self.W_key(x), self.W_value(x),
                                        self.mask[:T, :T].bool(), self.dropout)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([m(x) for m in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.H = num_heads
        self.Dh = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(diagonal=1))

    def _fold(self, X):
        # (B, T, H*Dh) -> (B*H, T, Dh)
        B, T, _ = X.shape
        return X.reshape(B, T, self.H, self.Dh).permute(0, 2, 1, 3).reshape(B * self.H, T, self.Dh)

    def _unfold(self, X, B):
        # (B*H, T, Dh) -> (B, T, H*Dh)
        T = X.size(1)
        return X.reshape(B, self.H, T, self.Dh).permute(0, 2, 1, 3).reshape(B, T, self.H * self.Dh)

    def forward(self, x):
        B, T, _ = x.shape
        Q, K, V = self._fold(self.W_query(x)), self._fold(self.W_key(x)), self._fold(self.W_value(x))
        O = batched_causal_attention(Q, K, V, self.mask[:T, :T].bool(), self.dropout)
        return self.out_proj(self._unfold(O, B))
