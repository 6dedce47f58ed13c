# sofia lindgren -- attention homework. Beginner style: loops first, vectorised where I trusted it.
import torch
import torch.nn as nn
import math


def init_qkv_weights(d_in, d_out):
    a = torch.rand(d_in, d_out)
    b = torch.rand(d_in, d_out)
    c = torch.rand(d_in, d_out)
    return a, b, c


def project(x, W_query, W_key, W_value):
    queries = x.matmul(W_query)
    keys = x.matmul(W_key)
    values = x.matmul(W_value)
    return queries, keys, values


def attention_scores(queries, keys):
    if queries.dim() == 2:
        n = queries.shape[0]
        result = torch.zeros(n, keys.shape[0])
        for i in range(n):
            for j in range(keys.shape[0]):
                result[i, j] = torch.dot(queries[i], keys[j])
        return result
    return queries.matmul(keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    scaled = scores / (d_k ** 0.5)
    return torch.nn.functional.softmax(scaled, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    torch.manual_seed(seed)
    results_before = []
    results_after = []
    q = torch.randn(num_trials, dim)
    k = torch.randn(num_trials, dim)
    for t in range(num_trials):
        d = torch.dot(q[t], k[t])
        results_before.append(d)
        results_after.append(d / math.sqrt(dim))
    before = torch.stack(results_before)
    after = torch.stack(results_after)
    return before.var(unbiased=False).item(), after.var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries = x.matmul(self.W_query)
        keys = x.matmul(self.W_key)
        values = x.matmul(self.W_value)
        weights = scaled_attention_weights(queries.matmul(keys.t()), keys.shape[1])
        return weights.matmul(values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        weights = scaled_attention_weights(queries.matmul(keys.t()), keys.shape[1])
        return weights.matmul(values)


def causal_mask(context_length):
    mask = torch.zeros(context_length, context_length, dtype=torch.bool)
    for i in range(context_length):
        for j in range(i + 1, context_length):
            mask[i, j] = True
    return mask


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    lower = torch.tril(torch.ones(n, n, device=attn_weights.device))
    masked = attn_weights * lower
    sums = masked.sum(dim=-1, keepdim=True)
    return masked / sums


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    mask = causal_mask(n).to(scores.device)
    scores = scores.masked_fill(mask, -math.inf)
    return scaled_attention_weights(scores, d_k)


def attention_dropout(attn_weights, p, training=True):
    if training:
        drop = nn.Dropout(p)
        drop.train()
        return drop(attn_weights)
    return attn_weights


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        scores = queries.matmul(keys.transpose(1, 2))
        scores = scores.masked_fill(self.mask[0:n, 0:n], -math.inf)
        weights = torch.nn.functional.softmax(scores / math.sqrt(keys.shape[2]), dim=2)
        weights = self.dropout(weights)
        return weights.matmul(values)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for i in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        outs = []
        for h in self.heads:
            outs.append(h(x))
        return torch.cat(outs, dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out % num_heads should be 0")
        self.num_heads = num_heads
        self.head_size = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        outputs = []
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        for h in range(self.num_heads):
            part = slice(h * self.head_size, (h + 1) * self.head_size)
            q, k, v = queries[:, :, part], keys[:, :, part], values[:, :, part]
            scores = q.matmul(k.transpose(1, 2)).masked_fill(self.mask[:n, :n], -math.inf)
            w = self.dropout(torch.nn.functional.softmax(scores / math.sqrt(self.head_size), dim=-1))
            outputs.append(w.matmul(v))
        return self.out_proj(torch.cat(outputs, dim=-1))
