import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    W_q = torch.rand(d_in, d_out)
    W_k = torch.rand(d_in, d_out)
    W_v = torch.rand(d_in, d_out)
    return W_q, W_k, W_v


def project(x, W_query, W_key, W_value):
    Q = x @ W_query
    K = x @ W_key
    V = x @ W_value
    return Q, K, V


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    # normalise by the key dimension so the scores don't blow up
    return torch.softmax(scores / d_k, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(num_trials, dim, generator=g)
    K = torch.randn(num_trials, dim, generator=g)
    dots = (Q * K).sum(dim=-1)
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        Q, K, V = project(x, self.W_query, self.W_key, self.W_value)
        A = scaled_attention_weights(attention_scores(Q, K), K.shape[-1])
        return A @ V


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        A = scaled_attention_weights(attention_scores(Q, K), K.shape[-1])
        return A @ V


# %% step: masking


def causal_mask(context_length):
    return torch.ones(context_length, context_length, dtype=torch.bool).triu(1)


def mask_and_renormalize(attn_weights):
    A = attn_weights * torch.ones_like(attn_weights).tril()
    return A / A.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    S = scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf)
    return scaled_attention_weights(S, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("causal", causal_mask(context_length))

    def forward(self, x):
        T = x.shape[1]
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        S = attention_scores(Q, K).masked_fill(self.causal[:T, :T], -torch.inf)
        A = self.drop(scaled_attention_weights(S, K.shape[-1]))
        return A @ V


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.H = num_heads
        self.Dh = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_out = nn.Linear(d_out, d_out)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("causal", causal_mask(context_length))

    def forward(self, x):
        B, T, _ = x.shape
        Q = self.W_query(x).view(B, T, self.H, self.Dh).transpose(1, 2)
        K = self.W_key(x).view(B, T, self.H, self.Dh).transpose(1, 2)
        V = self.W_value(x).view(B, T, self.H, self.Dh).transpose(1, 2)
        S = attention_scores(Q, K).masked_fill(self.causal[:T, :T], -torch.inf)
        A = self.drop(scaled_attention_weights(S, self.Dh))
        Z = (A @ V).transpose(1, 2).reshape(B, T, self.H * self.Dh)
        return self.W_out(Z)
