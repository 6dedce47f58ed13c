import math

import torch
from torch import nn

# I wrote everything with explicit loops first so I understand it, then kept it.

# %% step: projection


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# %% step: scaling


def _scores_2d(q, k):
    n = q.shape[0]
    out = torch.empty(n, k.shape[0], dtype=q.dtype)
    for i in range(n):
        for j in range(k.shape[0]):
            out[i, j] = torch.dot(q[i], k[j])
    return out


def attention_scores(queries, keys):
    if queries.dim() == 2:
        return _scores_2d(queries, keys)
    lead = queries.shape[:-2]
    qf = queries.reshape(-1, *queries.shape[-2:])
    kf = keys.reshape(-1, *keys.shape[-2:])
    res = torch.stack([_scores_2d(qf[b], kf[b]) for b in range(qf.shape[0])])
    return res.reshape(*lead, queries.shape[-2], keys.shape[-2])


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    raw = []
    for t in range(num_trials):
        q = torch.randn(dim, generator=gen)
        k = torch.randn(dim, generator=gen)
        total = 0.0
        for i in range(dim):
            total += float(q[i]) * float(k[i])
        raw.append(total)
    mean = sum(raw) / len(raw)
    var_before = sum((r - mean) ** 2 for r in raw) / (len(raw) - 1)
    var_after = var_before / dim
    return var_before, var_after


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        n = x.shape[0]
        d = self.W_key.shape[1]
        queries = torch.matmul(x, self.W_query)
        keys = torch.matmul(x, self.W_key)
        values = torch.matmul(x, self.W_value)
        rows = []
        for i in range(n):
            s = torch.stack([torch.dot(queries[i], keys[j]) for j in range(n)])
            w = torch.softmax(s / math.sqrt(d), dim=0)
            ctx = torch.zeros(values.shape[1])
            for j in range(n):
                ctx = ctx + w[j] * values[j]
            rows.append(ctx)
        return torch.stack(rows)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        n, d = keys.shape
        rows = []
        for i in range(n):
            s = torch.stack([torch.dot(queries[i], keys[j]) for j in range(n)])
            w = torch.softmax(s / math.sqrt(d), dim=0)
            rows.append((w.unsqueeze(1) * values).sum(dim=0))
        return torch.stack(rows)


# %% step: masking


def causal_mask(context_length):
    m = torch.zeros(context_length, context_length, dtype=torch.bool)
    for i in range(context_length):
        for j in range(i + 1, context_length):
            m[i, j] = True
    return m


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    out = attn_weights.clone()
    for i in range(n):
        out[..., i, i + 1:] = 0.0
        out[..., i, :] = out[..., i, :] / out[..., i, :].sum(dim=-1, keepdim=True)
    return out


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    s = scores.clone()
    for i in range(n):
        s[..., i, i + 1:] = float('-inf')
    return torch.softmax(s / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0.0:
        return attn_weights
    keep = torch.empty_like(attn_weights).bernoulli_(1.0 - p)
    return attn_weights * keep / (1.0 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.context_length = context_length

    def forward(self, x):
        b, n, _ = x.shape
        outs = []
        for bi in range(b):
            q = self.W_query(x[bi])
            k = self.W_key(x[bi])
            v = self.W_value(x[bi])
            s = q @ k.T
            for i in range(n):
                s[i, i + 1:] = float('-inf')
            w = torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1)
            w = self.dropout(w)
            outs.append(w @ v)
        return torch.stack(outs)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        results = []
        for head in self.heads:
            results.append(head(x))
        return torch.cat(results, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        b, n, _ = x.shape
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        pieces = []
        for h in range(self.num_heads):
            lo, hi = h * self.head_dim, (h + 1) * self.head_dim
            q, k, v = Q[..., lo:hi], K[..., lo:hi], V[..., lo:hi]
            s = q @ k.transpose(1, 2)
            for i in range(n):
                s[:, i, i + 1:] = float('-inf')
            w = torch.softmax(s / math.sqrt(self.head_dim), dim=-1)
            w = self.dropout(w)
            pieces.append(w @ v)
        return self.out_proj(torch.cat(pieces, dim=-1))
