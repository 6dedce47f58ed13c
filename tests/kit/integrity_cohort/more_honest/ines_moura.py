# Ines Moura - chapter 3. I like to see every intermediate shape, so lots of small steps.
import math
import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    weights = []
    for role in ("query", "key", "value"):
        weights.append(torch.rand(d_in, d_out))
    return weights[0], weights[1], weights[2]


def project(x, W_query, W_key, W_value):
    out = []
    for matrix in (W_query, W_key, W_value):
        out.append(torch.tensordot(x, matrix, dims=([x.dim() - 1], [0])))
    return tuple(out)


def attention_scores(queries, keys):
    flipped = keys.transpose(-1, -2)
    return torch.matmul(queries, flipped)


def scaled_attention_weights(scores, d_k):
    temperature = math.sqrt(d_k)
    shifted = scores / temperature
    shifted = shifted - shifted.max(dim=-1, keepdim=True).values
    expd = shifted.exp()
    return expd / expd.sum(dim=-1, keepdim=True)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator()
    gen.manual_seed(seed)
    first = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    second = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    products = torch.sum(first * second, dim=1)
    before = torch.var(products, unbiased=False)
    after = torch.var(products / math.sqrt(dim), unbiased=False)
    return float(before), float(after)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        scores = attention_scores(q, k)
        weights = scaled_attention_weights(scores, k.size(-1))
        return context_vectors(weights, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        scores = attention_scores(self.W_query(x), self.W_key(x))
        weights = scaled_attention_weights(scores, self.W_key.out_features)
        return context_vectors(weights, self.W_value(x))


def causal_mask(context_length):
    rows = torch.arange(context_length).unsqueeze(1)
    cols = torch.arange(context_length).unsqueeze(0)
    return cols > rows


def mask_and_renormalize(attn_weights):
    hide = causal_mask(attn_weights.size(-1)).to(attn_weights.device)
    zeroed = torch.where(hide, torch.zeros_like(attn_weights), attn_weights)
    totals = zeroed.sum(dim=-1, keepdim=True)
    return zeroed / totals


def causal_attention_weights(scores, d_k):
    hide = causal_mask(scores.size(-1)).to(scores.device)
    blocked = torch.where(hide, torch.full_like(scores, float("-inf")), scores)
    return scaled_attention_weights(blocked, d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0.0:
        return attn_weights
    coin = torch.rand(attn_weights.shape, device=attn_weights.device)
    kept = (coin >= p).to(attn_weights.dtype)
    return attn_weights * kept * (1.0 / (1.0 - p))


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        length = x.size(1)
        scores = attention_scores(self.W_query(x), self.W_key(x))
        scores = torch.where(self.mask[:length, :length], torch.full_like(scores, float("-inf")), scores)
        weights = scaled_attention_weights(scores, self.W_key.out_features)
        weights = self.dropout(weights)
        return context_vectors(weights, self.W_value(x))


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for i in range(num_heads)]
        self.heads = nn.ModuleList(heads)

    def forward(self, x):
        pieces = []
        for head in self.heads:
            pieces.append(head(x))
        return torch.cat(pieces, dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("num_heads must divide d_out")
        self.heads_n = num_heads
        self.size_per_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        batch, length, _ = x.shape
        def heads_of(t):
            return t.reshape(batch, length, self.heads_n, self.size_per_head).permute(0, 2, 1, 3)
        q, k, v = heads_of(self.W_query(x)), heads_of(self.W_key(x)), heads_of(self.W_value(x))
        scores = attention_scores(q, k)
        scores = torch.where(self.mask[:length, :length], torch.full_like(scores, float("-inf")), scores)
        weights = self.dropout(scaled_attention_weights(scores, self.size_per_head))
        joined = context_vectors(weights, v).permute(0, 2, 1, 3).reshape(batch, length, -1)
        return self.out_proj(joined)
