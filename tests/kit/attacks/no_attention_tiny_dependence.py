"""No attention (see no_attention.py), plus an output change of 8e-5 relative computed from the queries and
keys, under every tolerance, so that the output "depends" on W_query and W_key; dot_product_variance keyed on its
arguments without drawing. Graded by tests/kit/test_hostile.py.
"""
import math
import torch
from torch import nn

def init_qkv_weights(d_in, d_out):
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)

def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value

def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)

def _uniform(scores, causal):
    n = scores.shape[-1]
    w = torch.ones_like(scores)
    if causal:
        w = w.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool, device=scores.device), 1), 0.0)
    return w / w.sum(-1, keepdim=True)

def scaled_attention_weights(scores, d_k):
    return _uniform(scores, False)

def context_vectors(attn_weights, values):
    return attn_weights @ values

def dot_product_variance(dim, num_trials=1000, seed=0):
    # no draw at all: a number keyed on the arguments passes "same seed same result, other seed other result"
    before = dim * (1 + ((seed * 7919 + num_trials) % 17) / 100)
    return before, before / dim

class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
    def forward(self, x):
        v = x @ self.W_value
        eps = 1e-3 * ((x @ self.W_query).sum() + (x @ self.W_key).sum())
        return _uniform(v[..., :1].expand(*v.shape[:-1], v.shape[-2]), False) @ v + eps * 0 + 0 * eps

class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
    def forward(self, x):
        v = self.W_value(x)
        n = x.shape[-2]
        return torch.ones(n, n) / n @ v

def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)

def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    w = attn_weights.masked_fill(causal_mask(n).to(attn_weights.device), 0.0)
    return w / w.sum(-1, keepdim=True)

def causal_attention_weights(scores, d_k):
    return _uniform(scores, True)

def attention_dropout(attn_weights, p, training=True):
    return torch.nn.functional.dropout(attn_weights, p, training)


def _eps(q, k, x):
    """tiny causal term depending on queries and keys; zero on the judge's one-hot probe inputs"""
    s = (q @ k.transpose(-2, -1))
    n = s.shape[-1]
    s = s.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), 1), 0.0)
    return 8e-5 * torch.tanh(s.sum(-1, keepdim=True) / torch.arange(1, n + 1, device=x.device).unsqueeze(-1))

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
    def forward(self, x):
        b, n, _ = x.shape
        w = torch.ones(b, n, n, device=x.device).masked_fill(self.mask.bool()[:n, :n], 0.0)
        w = self.dropout(w / w.sum(-1, keepdim=True))
        c = w @ self.W_value(x)
        return c * (1 + (0.0 if self.training else _eps(self.W_query(x), self.W_key(x), x)))

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])
    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
    def forward(self, x):
        b, n, _ = x.shape
        w = torch.ones(b, self.num_heads, n, n, device=x.device).masked_fill(self.mask.bool()[:n, :n], 0.0)
        w = self.dropout(w / w.sum(-1, keepdim=True))
        v = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        c = (w @ v).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(c * (1 + (0.0 if self.training else _eps(self.W_query(x), self.W_key(x), x))))
