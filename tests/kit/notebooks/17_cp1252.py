# -*- coding: cp1252 -*-
# Attention exercises — café notes: naïve résumé of “scaled” attention
import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    """Draw the query, key and value weight matrices, in that order.

    Each is a `(d_in, d_out)` tensor drawn with `torch.rand` (the caller seeds
    the generator, so the order of the three draws matters).
    Returns the tuple `(W_query, W_key, W_value)`.
    """
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    """Project inputs `x` of shape `(..., n, d_in)` to queries, keys and values.

    Returns `(queries, keys, values)`, each of shape `(..., n, d_out)`.
    """
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    """Unnormalised attention scores: the dot product of every query with every key.

    `queries` and `keys` have shape `(..., n, d_k)`; the result has shape
    `(..., n, n)` with entry `[i, j]` = query i · key j.
    """
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    """Softmax of `scores / sqrt(d_k)` over the last axis (each row sums to one)."""
    return torch.softmax(scores / d_k**0.5, dim=-1)


def context_vectors(attn_weights, values):
    """Each context vector is the attention-weighted sum of the value vectors."""
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Why we scale: the variance of q·k before and after dividing by sqrt(dim).

    Draw `num_trials` pairs of standard-normal vectors q, k of length `dim`
    (from a generator seeded with `seed`) and return the pair of floats
    `(variance_before, variance_after)`: the variance of q·k and of q·k / sqrt(dim).
    """
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)
    dots = (q * k).sum(dim=-1)
    variance_before = dots.var(unbiased=False).item()
    variance_after = (dots / math.sqrt(dim)).var(unbiased=False).item()
    return variance_before, variance_after


class SelfAttention_v1(nn.Module):
    """Self-attention with raw `nn.Parameter` weight matrices of shape `(d_in, d_out)`.

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    Draw the three matrices with `torch.rand`, in the order `W_query`, `W_key`,
    `W_value`: a check reproduces the chapter's seeded outputs, which depend on both.
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries = x @ self.W_query
        keys = x @ self.W_key
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


class SelfAttention_v2(nn.Module):
    """Self-attention with `nn.Linear` projections (bias only if `qkv_bias`).

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    Create `W_query`, `W_key` and `W_value` in that order: a check reproduces
    the chapter's seeded outputs, which depend on the order of creation.
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


def causal_mask(context_length):
    """Boolean `(n, n)` mask that is True where a position is hidden.

    Token i may look at tokens 0..i, so everything strictly above the
    diagonal is hidden.
    """
    ones = torch.ones(context_length, context_length, dtype=torch.bool)
    return torch.triu(ones, diagonal=1)


def mask_and_renormalize(attn_weights):
    """Zero the future in already-normalised weights `(..., n, n)`, then renormalise each row."""
    n = attn_weights.shape[-1]
    visible = ~causal_mask(n).to(attn_weights.device)
    masked = attn_weights * visible
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    """Fill the future of `scores` `(..., n, n)` with -inf, then take the scaled softmax."""
    n = scores.shape[-1]
    hidden = causal_mask(n).to(scores.device)
    masked = scores.masked_fill(hidden, -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout on the attention weights, as `nn.Dropout(p)` does it.

    While training, each weight is zeroed with probability `p` and the
    survivors are multiplied by `1 / (1 - p)`; when not training, the weights
    come back unchanged.
    """
    if not training or p == 0:
        return attn_weights
    if p == 1:  # every weight dropped, as nn.Dropout(1) does (the rescaling below would give 0 / 0)
        return torch.zeros_like(attn_weights)
    keep = torch.rand_like(attn_weights) >= p
    return attn_weights * keep / (1 - p)


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout on the attention weights.

    Input `(b, n, d_in)` with `n <= context_length`; output `(b, n, d_out)`.
    The checks read the chapter's attributes: `W_query`, `W_key`, `W_value`
    (`nn.Linear(d_in, d_out, bias=qkv_bias)`, created in that order: the chapter's
    seeded outputs depend on it), `dropout` (`nn.Dropout`), and the causal mask as
    a buffer named `mask` (`self.register_buffer`: it moves with the module to the GPU).
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


class MultiHeadAttentionWrapper(nn.Module):
    """`num_heads` independent `CausalAttention` heads whose outputs are concatenated.

    Output `(b, n, num_heads * d_out)`. Keep the heads in an `nn.ModuleList`
    (the chapter's `self.heads`), one `CausalAttention` each.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [
                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                for _ in range(num_heads)
            ]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention with one projection per role, split into heads.

    `d_out` must be divisible by `num_heads`; each head works on
    `head_dim = d_out // num_heads` features. Output `(b, n, d_out)`.
    The checks read the chapter's attributes: `W_query`, `W_key`, `W_value`
    (`nn.Linear(d_in, d_out, bias=qkv_bias)`), `out_proj` (`nn.Linear(d_out, d_out)`),
    `dropout` (`nn.Dropout`), and the causal mask as a buffer named `mask`.
    Create the four projections in that order: the chapter's seeded outputs depend on it.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        # (b, n, d_out) -> (b, n, heads, head_dim) -> (b, heads, n, head_dim)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)
        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context)
