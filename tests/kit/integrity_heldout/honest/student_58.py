import math
import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    queries = torch.matmul(x, W_query)
    keys = torch.matmul(x, W_key)
    values = torch.matmul(x, W_value)
    return queries, keys, values


# %% step: scaling


def attention_scores(queries, keys):
    dims = list(range(keys.dim()))
    dims[-1], dims[-2] = dims[-2], dims[-1]
    return torch.matmul(queries, keys.permute(*dims))


def scaled_attention_weights(scores, d_k):
    scale = 1.0 / math.sqrt(d_k)
    return torch.softmax(scores * scale, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator()
    gen.manual_seed(seed)
    pairs = torch.randn(num_trials, 2, dim, generator=gen)
    dots = (pairs[:, 0, :] * pairs[:, 1, :]).sum(dim=1)
    v1 = torch.var(dots, unbiased=True)
    v2 = torch.var(dots / math.sqrt(dim), unbiased=True)
    return float(v1), float(v2)


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.scale = 1.0 / math.sqrt(d_out)

    def forward(self, x):
        queries = torch.matmul(x, self.W_query)
        keys = torch.matmul(x, self.W_key)
        values = torch.matmul(x, self.W_value)
        scores = torch.matmul(queries, keys.permute(1, 0))
        weights = torch.softmax(scores * self.scale, dim=-1)
        return torch.matmul(weights, values)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.scale = 1.0 / math.sqrt(d_out)

    def forward(self, x):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        scores = torch.matmul(queries, keys.permute(1, 0))
        weights = torch.softmax(scores * self.scale, dim=-1)
        return torch.matmul(weights, values)


# %% step: masking


def causal_mask(context_length):
    idx = torch.arange(context_length)
    return idx.reshape(1, -1) > idx.reshape(-1, 1)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    lower = (~causal_mask(n)).float()
    kept = attn_weights * lower
    totals = kept.sum(dim=-1).reshape(*kept.shape[:-1], 1)
    return kept / totals


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    filled = scores.masked_fill(causal_mask(n), float("-inf"))
    return torch.softmax(filled / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if training:
        return nn.functional.dropout(attn_weights, p=p, training=True)
    return attn_weights


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))
        self.scale = 1.0 / math.sqrt(d_out)

    def forward(self, x):
        num_tokens = x.shape[1]
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        scores = torch.matmul(queries, keys.permute(0, 2, 1))
        scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens], float("-inf"))
        weights = torch.softmax(scores * self.scale, dim=-1)
        weights = self.dropout(weights)
        return torch.matmul(weights, values)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat(tuple(h(x) for h in self.heads), dim=2)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out % num_heads != 0"
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
        b, n, _ = x.shape
        q = self.W_query(x).reshape(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(b, n, self.num_heads, self.head_dim).permute(0, 2, 3, 1)
        v = self.W_value(x).reshape(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k)  # k is already (b, h, head_dim, n)
        scores = scores.masked_fill(self.mask[:n, :n], float("-inf"))
        weights = torch.softmax(scores / math.sqrt(self.head_dim), dim=-1)
        weights = self.dropout(weights)
        out = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(b, n, self.d_out)
        return self.out_proj(out)
