# plausible: the chapter always uses qkv_bias=False, so the student hard-codes it
"""Attention mechanisms, step by step: your working copy.

Fill in every function or method that raises NotImplementedError. Keep the
names and signatures exactly: the autograder calls them by name.
Check one step with `python check.py projection` (see README.md).
This file was generated from the course's solutions; your edits are yours.
"""

import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    """Draw the query, key and value weight matrices, in that order.

    Each is a `(d_in, d_out)` tensor drawn with `torch.rand` (the caller seeds
    the generator, so the order of the three draws matters).
    Returns the tuple `(W_query, W_key, W_value)`.
    """
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    """Project inputs `x` of shape `(..., n, d_in)` to queries, keys and values.

    Returns `(queries, keys, values)`, each of shape `(..., n, d_out)`.
    """
    q = torch.matmul(x, W_query)
    k = torch.matmul(x, W_key)
    v = torch.matmul(x, W_value)
    return q, k, v


# %% step: scaling


def attention_scores(queries, keys):
    """Unnormalised attention scores: the dot product of every query with every key.

    `queries` and `keys` have shape `(..., n, d_k)`; the result has shape
    `(..., n, n)` with entry `[i, j]` = query i · key j.
    """
    # swap the last two axes of the keys so every query meets every key
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    """Softmax of `scores / sqrt(d_k)` over the last axis (each row sums to one)."""
    scaled = scores / math.sqrt(d_k)
    return torch.softmax(scaled, dim=-1)


def context_vectors(attn_weights, values):
    """Each context vector is the attention-weighted sum of the value vectors."""
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Why we scale: the variance of q·k before and after dividing by sqrt(dim).

    Draw `num_trials` pairs of standard-normal vectors q, k of length `dim`
    (from a generator seeded with `seed`) and return the pair of floats
    `(variance_before, variance_after)`: the variance of q·k and of q·k / sqrt(dim).
    """
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    dots = (q * k).sum(dim=1)
    before = dots.var(unbiased=False).item()
    after = (dots / math.sqrt(dim)).var(unbiased=False).item()
    return before, after


class SelfAttention_v1(nn.Module):
    """Self-attention with raw `nn.Parameter` weight matrices of shape `(d_in, d_out)`.

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
        scores = q @ k.T
        d_k = k.shape[-1]
        weights = torch.softmax(scores / d_k**0.5, dim=-1)
        return weights @ v


class SelfAttention_v2(nn.Module):
    """Self-attention with `nn.Linear` projections (bias only if `qkv_bias`).

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    """

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
        d_k = k.shape[-1]
        weights = torch.softmax(scores / d_k**0.5, dim=-1)
        return weights @ v


# %% step: masking


def causal_mask(context_length):
    """Boolean `(n, n)` mask that is True where a position is hidden.

    Token i may look at tokens 0..i, so everything strictly above the
    diagonal is hidden.
    """
    full = torch.ones(context_length, context_length, dtype=torch.bool)
    # strictly above the diagonal = the future
    return torch.triu(full, diagonal=1)


def mask_and_renormalize(attn_weights):
    """Zero the future in already-normalised weights `(..., n, n)`, then renormalise each row."""
    n = attn_weights.shape[-1]
    keep = (~causal_mask(n)).to(attn_weights.device)
    zeroed = attn_weights * keep
    row_sums = zeroed.sum(dim=-1, keepdim=True)
    return zeroed / row_sums


def causal_attention_weights(scores, d_k):
    """Fill the future of `scores` `(..., n, n)` with -inf, then take the scaled softmax."""
    n = scores.shape[-1]
    future = causal_mask(n).to(scores.device)
    filled = scores.masked_fill(future, float("-inf"))
    return torch.softmax(filled / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout on the attention weights, as `nn.Dropout(p)` does it.

    While training, each weight is zeroed with probability `p` and the
    survivors are multiplied by `1 / (1 - p)`; when not training, the weights
    come back unchanged.
    """
    if not training or p == 0:
        return attn_weights
    if p == 1:
        # everything is dropped; avoid dividing by zero
        return torch.zeros_like(attn_weights)
    survivors = torch.rand_like(attn_weights) >= p
    return attn_weights * survivors / (1 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout on the attention weights.

    Input `(b, n, d_in)` with `n <= context_length`; output `(b, n, d_out)`.
    The checks read the chapter's attributes: `W_query`, `W_key`, `W_value`
    (`nn.Linear(d_in, d_out, bias=qkv_bias)`), `dropout` (`nn.Dropout`), and the
    causal mask as a buffer named `mask` (`self.register_buffer`: it moves with
    the module to the GPU).
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        batch, num_tokens, _ = x.shape
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        scores = q @ k.transpose(1, 2)
        hide = self.mask.bool()[:num_tokens, :num_tokens]
        scores = scores.masked_fill(hide, -torch.inf)
        weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        weights = self.dropout(weights)
        return weights @ v


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """`num_heads` independent `CausalAttention` heads whose outputs are concatenated.

    Output `(b, n, num_heads * d_out)`.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        outs = [h(x) for h in self.heads]
        return torch.cat(outs, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention with one projection per role, split into heads.

    `d_out` must be divisible by `num_heads`; each head works on
    `head_dim = d_out // num_heads` features. Output `(b, n, d_out)`.
    The checks read the chapter's attributes: `W_query`, `W_key`, `W_value`
    (`nn.Linear(d_in, d_out, bias=qkv_bias)`), `out_proj` (`nn.Linear(d_out, d_out)`),
    `dropout` (`nn.Dropout`), and the causal mask as a buffer named `mask`.
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
        b, num_tokens, _ = x.shape
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        # split the last axis into heads: (b, n, d_out) -> (b, n, h, hd) -> (b, h, n, hd)
        q = q.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(2, 3)
        hide = self.mask.bool()[:num_tokens, :num_tokens]
        scores = scores.masked_fill(hide, -torch.inf)
        weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        weights = self.dropout(weights)
        ctx = (weights @ v).transpose(1, 2)
        ctx = ctx.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(ctx)
