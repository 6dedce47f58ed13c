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
    # TODO: Implement for Step 1 (projection).
    raise NotImplementedError("projection: init_qkv_weights is not implemented yet")


def project(x, W_query, W_key, W_value):
    """Project inputs `x` of shape `(..., n, d_in)` to queries, keys and values.

    Returns `(queries, keys, values)`, each of shape `(..., n, d_out)`.
    """
    # TODO: Implement for Step 1 (projection).
    raise NotImplementedError("projection: project is not implemented yet")


# %% step: scaling


def attention_scores(queries, keys):
    """Unnormalised attention scores: the dot product of every query with every key.

    `queries` and `keys` have shape `(..., n, d_k)`; the result has shape
    `(..., n, n)` with entry `[i, j]` = query i · key j.
    """
    # TODO: Implement for Step 2 (scaling).
    raise NotImplementedError("scaling: attention_scores is not implemented yet")


def scaled_attention_weights(scores, d_k):
    """Softmax of `scores / sqrt(d_k)` over the last axis (each row sums to one)."""
    # TODO: Implement for Step 2 (scaling).
    raise NotImplementedError("scaling: scaled_attention_weights is not implemented yet")


def context_vectors(attn_weights, values):
    """Each context vector is the attention-weighted sum of the value vectors."""
    # TODO: Implement for Step 2 (scaling).
    raise NotImplementedError("scaling: context_vectors is not implemented yet")


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Why we scale: the variance of q·k before and after dividing by sqrt(dim).

    Draw `num_trials` pairs of standard-normal vectors q, k of length `dim`
    (from a generator seeded with `seed`) and return the pair of floats
    `(variance_before, variance_after)`: the variance of q·k and of q·k / sqrt(dim).
    """
    # TODO: Implement for Step 2 (scaling).
    raise NotImplementedError("scaling: dot_product_variance is not implemented yet")


class SelfAttention_v1(nn.Module):
    """Self-attention with raw `nn.Parameter` weight matrices of shape `(d_in, d_out)`.

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    Draw the three matrices with `torch.rand`, in the order `W_query`, `W_key`,
    `W_value`: a check reproduces the chapter's seeded outputs, which depend on both.
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        # TODO: Implement for Step 2 (scaling).
        raise NotImplementedError("scaling: SelfAttention_v1.__init__ is not implemented yet")

    def forward(self, x):
        # TODO: Implement for Step 2 (scaling).
        raise NotImplementedError("scaling: SelfAttention_v1.forward is not implemented yet")


class SelfAttention_v2(nn.Module):
    """Self-attention with `nn.Linear` projections (bias only if `qkv_bias`).

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    Create `W_query`, `W_key` and `W_value` in that order: a check reproduces
    the chapter's seeded outputs, which depend on the order of creation.
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        # TODO: Implement for Step 2 (scaling).
        raise NotImplementedError("scaling: SelfAttention_v2.__init__ is not implemented yet")

    def forward(self, x):
        # TODO: Implement for Step 2 (scaling).
        raise NotImplementedError("scaling: SelfAttention_v2.forward is not implemented yet")


# %% step: masking


def causal_mask(context_length):
    """Boolean `(n, n)` mask that is True where a position is hidden.

    Token i may look at tokens 0..i, so everything strictly above the
    diagonal is hidden.
    """
    # TODO: Implement for Step 3 (masking).
    raise NotImplementedError("masking: causal_mask is not implemented yet")


def mask_and_renormalize(attn_weights):
    """Zero the future in already-normalised weights `(..., n, n)`, then renormalise each row."""
    # TODO: Implement for Step 3 (masking).
    raise NotImplementedError("masking: mask_and_renormalize is not implemented yet")


def causal_attention_weights(scores, d_k):
    """Fill the future of `scores` `(..., n, n)` with -inf, then take the scaled softmax."""
    # TODO: Implement for Step 3 (masking).
    raise NotImplementedError("masking: causal_attention_weights is not implemented yet")


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout on the attention weights, as `nn.Dropout(p)` does it.

    While training, each weight is zeroed with probability `p` and the
    survivors are multiplied by `1 / (1 - p)`; when not training, the weights
    come back unchanged.
    """
    # TODO: Implement for Step 4 (dropout).
    raise NotImplementedError("dropout: attention_dropout is not implemented yet")


# %% step: causal_attention


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
        # TODO: Implement for Step 5 (causal_attention).
        raise NotImplementedError("causal_attention: CausalAttention.__init__ is not implemented yet")

    def forward(self, x):
        # TODO: Implement for Step 5 (causal_attention).
        raise NotImplementedError("causal_attention: CausalAttention.forward is not implemented yet")


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """`num_heads` independent `CausalAttention` heads whose outputs are concatenated.

    Output `(b, n, num_heads * d_out)`. Keep the heads in an `nn.ModuleList`
    (the chapter's `self.heads`), one `CausalAttention` each.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        # TODO: Implement for Step 6 (mha_wrapper).
        raise NotImplementedError("mha_wrapper: MultiHeadAttentionWrapper.__init__ is not implemented yet")

    def forward(self, x):
        # TODO: Implement for Step 6 (mha_wrapper).
        raise NotImplementedError("mha_wrapper: MultiHeadAttentionWrapper.forward is not implemented yet")


# %% step: multihead_attention


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
        # TODO: Implement for Step 7 (multihead_attention).
        raise NotImplementedError("multihead_attention: MultiHeadAttention.__init__ is not implemented yet")

    def forward(self, x):
        # TODO: Implement for Step 7 (multihead_attention).
        raise NotImplementedError("multihead_attention: MultiHeadAttention.forward is not implemented yet")
