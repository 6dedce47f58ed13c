import math
import torch
from torch import nn


def _additive_causal(n, dtype=torch.float32, device=None):
    # 0 on/below the diagonal, -inf above: add it to the scores
    return torch.full((n, n), float("-inf"), dtype=dtype, device=device).triu(1)


# %% step: projection

def init_qkv_weights(d_in, d_out):
    W_q = torch.rand(d_in, d_out)
    W_k = torch.rand(d_in, d_out)
    W_v = torch.rand(d_in, d_out)
    return W_q, W_k, W_v


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
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, 1, dim, generator=g)
    k = torch.randn(num_trials, dim, 1, generator=g)
    dots = (q @ k).view(-1)
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return torch.softmax(q @ k.T / math.sqrt(k.shape[-1]), dim=-1) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return torch.softmax(q @ k.T / math.sqrt(k.shape[-1]), dim=-1) @ v


# %% step: masking

def causal_mask(context_length):
    return torch.isinf(_additive_causal(context_length))


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    keep = torch.exp(_additive_causal(n, attn_weights.dtype, attn_weights.device))  # 1 / 0
    w = attn_weights * keep
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    bias = _additive_causal(scores.shape[-1], scores.dtype, scores.device)
    return torch.softmax((scores + bias) / math.sqrt(d_k), dim=-1)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p=p)


# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("attn_bias", _additive_causal(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = q @ k.transpose(1, 2) + self.attn_bias[:n, :n]
        w = self.dropout(torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1))
        return w @ v


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
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("attn_bias", _additive_causal(context_length))

    def forward(self, x):
        n = x.shape[1]
        q = self.W_query(x).unflatten(-1, (self.num_heads, -1)).transpose(1, 2)
        k = self.W_key(x).unflatten(-1, (self.num_heads, -1)).transpose(1, 2)
        v = self.W_value(x).unflatten(-1, (self.num_heads, -1)).transpose(1, 2)
        s = q @ k.transpose(-2, -1) + self.attn_bias[:n, :n]
        w = self.dropout(torch.softmax(s / math.sqrt(q.shape[-1]), dim=-1))
        out = (w @ v).transpose(1, 2).flatten(-2)
        return self.out_proj(out)
