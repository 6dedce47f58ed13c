"""Attention mechanisms, step by step: your working copy.

Fill in every function or method that raises NotImplementedError. Keep the
names and signatures exactly: the autograder calls them by name.
Check one step with `python check.py projection` (see README.md).
This file was generated from the course's solutions; your edits are yours.
"""

import math

import torch
from torch import nn
import torch.nn.functional as F

# %% step: projection


def init_qkv_weights(d_in, d_out):
    """Draw the query, key and value weight matrices, in that order.

    Each is a `(d_in, d_out)` tensor drawn with `torch.rand` (the caller seeds
    the generator, so the order of the three draws matters).
    Returns the tuple `(W_query, W_key, W_value)`.
    """
    # TODO: Implement for Step 1 (projection).
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    """Project inputs `x` of shape `(..., n, d_in)` to queries, keys and values.

    Returns `(queries, keys, values)`, each of shape `(..., n, d_out)`.
    """
    # TODO: Implement for Step 1 (projection).
    Q = x @ W_query
    K = x @ W_key
    V = x @ W_value
    return Q, K, V


# %% step: scaling


def attention_scores(queries, keys):
    """Unnormalised attention scores: the dot product of every query with every key.

    `queries` and `keys` have shape `(..., n, d_k)`; the result has shape
    `(..., n, n)` with entry `[i, j]` = query i · key j.
    """
    # TODO: Implement for Step 2 (scaling).
    return queries @ keys.mT


def scaled_attention_weights(scores, d_k):
    """Softmax of `scores / sqrt(d_k)` over the last axis (each row sums to one)."""
    # TODO: Implement for Step 2 (scaling).
    return F.softmax(scores * (1.0 / math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    """Each context vector is the attention-weighted sum of the value vectors."""
    # TODO: Implement for Step 2 (scaling).
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Why we scale: the variance of q·k before and after dividing by sqrt(dim).

    Draw `num_trials` pairs of standard-normal vectors q, k of length `dim`
    (from a generator seeded with `seed`) and return the pair of floats
    `(variance_before, variance_after)`: the variance of q·k and of q·k / sqrt(dim).
    """
    # TODO: Implement for Step 2 (scaling).
    G = torch.Generator().manual_seed(seed)
    Q = torch.randn(num_trials, dim, generator=G, dtype=torch.float64)
    K = torch.randn(num_trials, dim, generator=G, dtype=torch.float64)
    S = torch.sum(Q * K, dim=-1)
    return torch.var(S).item(), torch.var(S / math.sqrt(dim)).item()


class SelfAttention_v1(nn.Module):
    """Self-attention with raw `nn.Parameter` weight matrices of shape `(d_in, d_out)`.

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        # TODO: Implement for Step 2 (scaling).
        Wq, Wk, Wv = init_qkv_weights(d_in, d_out)
        self.W_query = nn.Parameter(Wq)
        self.W_key = nn.Parameter(Wk)
        self.W_value = nn.Parameter(Wv)

    def forward(self, x):
        # TODO: Implement for Step 2 (scaling).
        Q, K, V = project(x, self.W_query, self.W_key, self.W_value)
        A = scaled_attention_weights(attention_scores(Q, K), K.shape[-1])
        return context_vectors(A, V)


class SelfAttention_v2(nn.Module):
    """Self-attention with `nn.Linear` projections (bias only if `qkv_bias`).

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        # TODO: Implement for Step 2 (scaling).
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        # TODO: Implement for Step 2 (scaling).
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        A = scaled_attention_weights(attention_scores(Q, K), K.shape[-1])
        return context_vectors(A, V)


# %% step: masking


def causal_mask(context_length):
    """Boolean `(n, n)` mask that is True where a position is hidden.

    Token i may look at tokens 0..i, so everything strictly above the
    diagonal is hidden.
    """
    # TODO: Implement for Step 3 (masking).
    return ~torch.tril(torch.ones(context_length, context_length)).bool()


def mask_and_renormalize(attn_weights):
    """Zero the future in already-normalised weights `(..., n, n)`, then renormalise each row."""
    # TODO: Implement for Step 3 (masking).
    M = causal_mask(attn_weights.shape[-1])
    A = attn_weights.masked_fill(M, 0)
    return A / A.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    """Fill the future of `scores` `(..., n, n)` with -inf, then take the scaled softmax."""
    # TODO: Implement for Step 3 (masking).
    M = causal_mask(scores.shape[-1])
    return scaled_attention_weights(scores.masked_fill(M, -1e9), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout on the attention weights, as `nn.Dropout(p)` does it.

    While training, each weight is zeroed with probability `p` and the
    survivors are multiplied by `1 / (1 - p)`; when not training, the weights
    come back unchanged.
    """
    # TODO: Implement for Step 4 (dropout).
    return F.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout on the attention weights.

    Input `(b, n, d_in)` with `n <= context_length`; output `(b, n, d_out)`.
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        # TODO: Implement for Step 5 (causal_attention).
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        # TODO: Implement for Step 5 (causal_attention).
        T = x.shape[-2]
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        S = attention_scores(Q, K).masked_fill(self.mask[:T, :T], -1e9)
        A = self.dropout(scaled_attention_weights(S, K.shape[-1]))
        return A @ V


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """`num_heads` independent `CausalAttention` heads whose outputs are concatenated.

    Output `(b, n, num_heads * d_out)`.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        # TODO: Implement for Step 6 (mha_wrapper).
        self.heads = nn.ModuleList(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                   for _ in range(num_heads))

    def forward(self, x):
        # TODO: Implement for Step 6 (mha_wrapper).
        return torch.cat([h(x) for h in self.heads], -1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention with one projection per role, split into heads.

    `d_out` must be divisible by `num_heads`; each head works on
    `head_dim = d_out // num_heads` features. Output `(b, n, d_out)`.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        # TODO: Implement for Step 7 (multihead_attention).
        if d_out % num_heads != 0:
            raise ValueError("d_out % num_heads != 0")
        self.H = num_heads
        self.D = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        # TODO: Implement for Step 7 (multihead_attention).
        B, T, _ = x.shape
        split = lambda t: t.view(B, T, self.H, self.D).transpose(1, 2)
        Q, K, V = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        S = attention_scores(Q, K).masked_fill(self.mask[:T, :T], -1e9)
        A = self.dropout(scaled_attention_weights(S, self.D))
        Z = (A @ V).transpose(1, 2).contiguous().view(B, T, self.H * self.D)
        return self.out_proj(Z)
