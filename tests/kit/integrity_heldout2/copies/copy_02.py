# attention homework
# (all steps in one file)
import math

import torch
from torch import nn

def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value

def project(x, W_query, W_key, W_value):
    keys = x @ W_key
    values = x @ W_value
    queries = x @ W_query
    return queries, keys, values

def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)

def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / d_k**0.5, dim=-1)

def context_vectors(attn_weights, values):
    return attn_weights @ values

class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        sim = queries @ keys.T
        att_w = torch.softmax(sim / keys.shape[-1]**0.5, dim=-1)
        out = att_w @ values
        return out

class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        sim = queries @ keys.T
        att_w = torch.softmax(sim / keys.shape[-1]**0.5, dim=-1)
        out = att_w @ values
        return out

def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    samples = []
    for _ in range(num_trials):
        q = torch.randn(dim, generator=g, dtype=torch.float64)
        k = torch.randn(dim, generator=g, dtype=torch.float64)
        samples.append((q @ k).item())
    samples = torch.tensor(samples, dtype=torch.float64)
    scaled = samples / math.sqrt(dim)
    return samples.var(unbiased=False).item(), scaled.var(unbiased=False).item()

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    mask = torch.rand_like(attn_weights) >= p
    return attn_weights * mask / (1 - p)

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            'mask',
            torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, n_tok, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        sim = queries @ keys.transpose(1, 2)
        sim.masked_fill_(
            self.mask.bool()[:n_tok, :n_tok], -torch.inf)
        att_w = torch.softmax(
            sim / keys.shape[-1]**0.5, dim=-1
        )
        att_w = self.dropout(att_w)

        out = att_w @ values
        return out

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
             for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            'mask',
            torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, n_tok, d_in = x.shape

        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, n_tok, self.num_heads, self.head_dim)
        values = values.view(b, n_tok, self.num_heads, self.head_dim)
        queries = queries.view(b, n_tok, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        sim = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:n_tok, :n_tok]
        sim.masked_fill_(mask_bool, -torch.inf)

        att_w = torch.softmax(sim / keys.shape[-1]**0.5, dim=-1)
        att_w = self.dropout(att_w)

        out = (att_w @ values).transpose(1, 2)
        out = out.contiguous().view(b, n_tok, self.d_out)
        out = self.out_proj(out)
        return out

def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)

def mask_and_renormalize(attn_weights):
    context_length = attn_weights.shape[-1]
    lower_tri = torch.tril(torch.ones(context_length, context_length))
    kept = attn_weights * lower_tri
    denominator = kept.sum(dim=-1, keepdim=True)
    return kept / denominator

def causal_attention_weights(scores, d_k):
    context_length = scores.shape[-1]
    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    masked = scores.masked_fill(mask.bool(), -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)
