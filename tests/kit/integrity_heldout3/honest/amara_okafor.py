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
    W_query = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    W_key = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    W_value = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    """Project inputs `x` of shape `(..., n, d_in)` to queries, keys and values.

    Returns `(queries, keys, values)`, each of shape `(..., n, d_out)`.
    """
    queries = x @ W_query
    keys = x @ W_key
    values = x @ W_value
    return queries, keys, values


# %% step: scaling


def attention_scores(queries, keys):
    """Unnormalised attention scores: the dot product of every query with every key.

    `queries` and `keys` have shape `(..., n, d_k)`; the result has shape
    `(..., n, n)` with entry `[i, j]` = query i · key j.
    """
    attn_scores = queries @ keys.transpose(-2, -1)
    return attn_scores


def scaled_attention_weights(scores, d_k):
    """Softmax of `scores / sqrt(d_k)` over the last axis (each row sums to one)."""
    attn_weights = torch.softmax(scores / d_k**0.5, dim=-1)
    return attn_weights


def context_vectors(attn_weights, values):
    """Each context vector is the attention-weighted sum of the value vectors."""
    context_vec = attn_weights @ values
    return context_vec


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Why we scale: the variance of q·k before and after dividing by sqrt(dim).

    Draw `num_trials` pairs of standard-normal vectors q, k of length `dim`
    (from a generator seeded with `seed`) and return the pair of floats
    `(variance_before, variance_after)`: the variance of q·k and of q·k / sqrt(dim).
    """
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen)
    k = torch.randn(num_trials, dim, generator=gen)
    dots = (q * k).sum(dim=-1)
    variance_before = torch.var(dots).item()
    variance_after = torch.var(dots / math.sqrt(dim)).item()
    return variance_before, variance_after


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
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value

        attn_scores = queries @ keys.T  # omega
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec


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
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec


# %% step: masking


def causal_mask(context_length):
    """Boolean `(n, n)` mask that is True where a position is hidden.

    Token i may look at tokens 0..i, so everything strictly above the
    diagonal is hidden.
    """
    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    return mask.bool()


def mask_and_renormalize(attn_weights):
    """Zero the future in already-normalised weights `(..., n, n)`, then renormalise each row."""
    context_length = attn_weights.shape[-1]
    mask_simple = torch.tril(torch.ones(context_length, context_length))
    masked_simple = attn_weights * mask_simple
    row_sums = masked_simple.sum(dim=-1, keepdim=True)
    masked_simple_norm = masked_simple / row_sums
    return masked_simple_norm


def causal_attention_weights(scores, d_k):
    """Fill the future of `scores` `(..., n, n)` with -inf, then take the scaled softmax."""
    context_length = scores.shape[-1]
    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    masked = scores.masked_fill(mask.bool(), -torch.inf)
    attn_weights = torch.softmax(masked / d_k**0.5, dim=-1)
    return attn_weights


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout on the attention weights, as `nn.Dropout(p)` does it.

    While training, each weight is zeroed with probability `p` and the
    survivors are multiplied by `1 / (1 - p)`; when not training, the weights
    come back unchanged.
    """
    dropout = torch.nn.Dropout(p)
    dropout.train(training)
    return dropout(attn_weights)


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
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(
            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = attn_weights @ values
        return context_vec


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """`num_heads` independent `CausalAttention` heads whose outputs are concatenated.

    Output `(b, n, num_heads * d_out)`. Keep the heads in an `nn.ModuleList`
    (the chapter's `self.heads`), one `CausalAttention` each.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
             for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


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
            "mask",
            torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape

        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec
