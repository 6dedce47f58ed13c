# Attention mechanisms homework.

import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    # query first, then key, then value (the order matters because of the seed)
    query_weight = torch.rand(d_in, d_out)
    key_weight = torch.rand(d_in, d_out)
    value_weight = torch.rand(d_in, d_out)
    return query_weight, key_weight, value_weight


def project(x, W_query, W_key, W_value):
    qs = torch.matmul(x, W_query)
    ks = torch.matmul(x, W_key)
    vs = torch.matmul(x, W_value)
    return qs, ks, vs


# %% step: scaling


def context_vectors(attn_weights, values):
    # weighted sum of the values
    return torch.matmul(attn_weights, values)


def attention_scores(queries, keys):
    # dot product of every query with every key
    return torch.matmul(queries, torch.transpose(keys, -2, -1))


def scaled_attention_weights(scores, d_k):
    # scale by 1/sqrt(d_k), softmax over the last dim
    scaled_scores = scores * d_k ** -0.5
    return torch.softmax(scaled_scores, dim=-1)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator().manual_seed(seed)
    prods = torch.zeros(num_trials)
    for trial in range(num_trials):
        qv = torch.randn(dim, generator=rng)
        kv = torch.randn(dim, generator=rng)
        prods[trial] = torch.dot(qv, kv)
    var_pre = prods.var().item()
    var_post = (prods * dim ** -0.5).var().item()
    return var_pre, var_post


class SelfAttention_v2(nn.Module):
    """Same as v1 but with linear layers."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        qs = self.W_query(x)
        ks = self.W_key(x)
        vs = self.W_value(x)
        w = scaled_attention_weights(attention_scores(qs, ks), ks.shape[-1])
        return context_vectors(w, vs)


class SelfAttention_v1(nn.Module):
    """Self-attention with raw weight matrices."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        qs, ks, vs = project(x, self.W_query, self.W_key, self.W_value)
        raw = attention_scores(qs, ks)
        w = scaled_attention_weights(raw, ks.shape[-1])
        return context_vectors(w, vs)


# %% step: masking


def causal_mask(context_length):
    # True above the diagonal: the future is hidden
    full = torch.ones(context_length, context_length, dtype=torch.bool)
    return torch.triu(full, diagonal=1)


def causal_attention_weights(scores, d_k):
    m = causal_mask(scores.shape[-1])
    masked_scores = scores.masked_fill(m, -torch.inf)
    return scaled_attention_weights(masked_scores, d_k)


def mask_and_renormalize(attn_weights):
    size = attn_weights.shape[-1]
    lower = torch.tril(torch.ones(size, size, dtype=attn_weights.dtype))
    kept = attn_weights * lower
    totals = kept.sum(dim=-1, keepdim=True)
    return kept / totals


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights  # eval mode: nothing changes
    layer = nn.Dropout(p)
    return layer(attn_weights)


# %% step: causal_attention


class CausalAttention(nn.Module):
    """Single-head causal attention."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("future_mask", causal_mask(context_length))

    def forward(self, x):
        bsz, seq_len, _ = x.shape
        qs = self.W_query(x)
        ks = self.W_key(x)
        vs = self.W_value(x)

        raw = torch.matmul(qs, ks.permute(0, 2, 1))
        # trim the mask in case the sequence is shorter than context_length
        raw.masked_fill_(self.future_mask[:seq_len, :seq_len], -torch.inf)
        w = torch.softmax(raw * self.d_out ** -0.5, dim=-1)
        w = self.drop(w)
        return torch.matmul(w, vs)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Efficient multi-head attention: one projection per role, split into heads."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.n_heads = num_heads
        self.dim_per_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.output_projection = nn.Linear(d_out, d_out)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("future_mask", causal_mask(context_length))

    def _split(self, t, bsz, seq_len):
        # (bsz, tokens, d_out) -> (bsz, heads, tokens, dim_per_head)
        return t.view(bsz, seq_len, self.n_heads, self.dim_per_head).permute(0, 2, 1, 3)

    def forward(self, x):
        bsz, seq_len, _ = x.shape
        qs = self._split(self.W_query(x), bsz, seq_len)
        ks = self._split(self.W_key(x), bsz, seq_len)
        vs = self._split(self.W_value(x), bsz, seq_len)

        raw = torch.matmul(qs, ks.permute(0, 1, 3, 2))
        raw.masked_fill_(self.future_mask[:seq_len, :seq_len], -torch.inf)
        w = torch.softmax(raw * self.dim_per_head ** -0.5, dim=-1)
        w = self.drop(w)

        ctx = torch.matmul(w, vs).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(bsz, seq_len, self.d_out)
        return self.output_projection(ctx)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """Several independent heads, concatenated."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.head_list = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        outs = [h(x) for h in self.head_list]
        return torch.cat(outs, dim=-1)
