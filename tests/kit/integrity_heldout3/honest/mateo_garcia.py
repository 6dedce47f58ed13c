"""Attention mechanisms, step by step: your working copy.

Mateo Garcia. I did the first steps with explicit loops so I could see what
every number is, then switched to matrix products for the modules.
"""

import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    weights = []
    for _ in range(3):  # query, key, value
        weights.append(torch.rand(d_in, d_out))
    return tuple(weights)


def project(x, W_query, W_key, W_value):
    queries = torch.matmul(x, W_query)
    keys = torch.matmul(x, W_key)
    values = torch.matmul(x, W_value)
    return queries, keys, values


# %% step: scaling


def attention_scores(queries, keys):
    n_q = queries.shape[-2]
    n_k = keys.shape[-2]
    scores = torch.empty(*queries.shape[:-2], n_q, n_k, dtype=queries.dtype, device=queries.device)
    for i in range(n_q):
        for j in range(n_k):
            # dot product of query i with key j
            scores[..., i, j] = (queries[..., i, :] * keys[..., j, :]).sum(dim=-1)
    return scores


def scaled_attention_weights(scores, d_k):
    scaled = scores / math.sqrt(d_k)
    # softmax estable: restar el maximo de cada fila
    scaled = scaled - scaled.max(dim=-1, keepdim=True).values
    expd = torch.exp(scaled)
    return expd / expd.sum(dim=-1, keepdim=True)


def context_vectors(attn_weights, values):
    n = attn_weights.shape[-2]
    rows = []
    for i in range(n):
        # weighted sum of all value vectors with the weights of row i
        z_i = (attn_weights[..., i, :].unsqueeze(-1) * values).sum(dim=-2)
        rows.append(z_i)
    return torch.stack(rows, dim=-2)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator()
    gen.manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen)
    k = torch.randn(num_trials, dim, generator=gen)
    products = []
    for t in range(num_trials):
        products.append(torch.dot(q[t], k[t]))
    products = torch.stack(products)
    var_before = products.var().item()
    var_after = (products / math.sqrt(dim)).var().item()
    return var_before, var_after


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        scores = q @ k.T
        weights = scaled_attention_weights(scores, k.shape[-1])
        return weights @ v


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
        scores = q @ k.T
        weights = scaled_attention_weights(scores, k.shape[-1])
        return weights @ v


# %% step: masking


def causal_mask(context_length):
    mask = torch.zeros(context_length, context_length, dtype=torch.bool)
    for i in range(context_length):
        for j in range(i + 1, context_length):
            mask[i, j] = True  # j is in the future of i
    return mask


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    hidden = causal_mask(n).to(attn_weights.device)
    w = attn_weights.masked_fill(hidden, 0.0)
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    hidden = causal_mask(n).to(scores.device)
    scores = scores.masked_fill(hidden, float("-inf"))
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p)


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
        n_tokens = x.shape[1]
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        scores = q @ k.transpose(1, 2)
        scores = scores.masked_fill(self.mask[:n_tokens, :n_tokens], float("-inf"))
        weights = torch.softmax(scores / math.sqrt(k.shape[-1]), dim=-1)
        weights = self.dropout(weights)
        return weights @ v


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        outputs = []
        for head in self.heads:
            outputs.append(head(x))
        return torch.cat(outputs, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n_tokens, _ = x.shape
        # (b, n, d_out) -> (b, heads, n, head_dim)
        q = self.W_query(x).view(b, n_tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.W_key(x).view(b, n_tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.W_value(x).view(b, n_tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        scores = q @ k.transpose(-2, -1)
        scores = scores.masked_fill(self.mask[:n_tokens, :n_tokens], float("-inf"))
        weights = torch.softmax(scores / math.sqrt(self.head_dim), dim=-1)
        weights = self.dropout(weights)
        out = (weights @ v).permute(0, 2, 1, 3).contiguous()
        out = out.view(b, n_tokens, self.d_out)
        return self.out_proj(out)
