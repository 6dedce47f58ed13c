"""Attention mechanisms exercise (Google-style docstrings)."""

import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    """Draws the query, key and value weight matrices.

    Args:
        d_in: Input embedding size.
        d_out: Output embedding size.

    Returns:
        A tuple ``(W_query, W_key, W_value)`` of ``(d_in, d_out)`` tensors.
    """
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    """Projects inputs to queries, keys and values.

    Args:
        x: Tensor of shape ``(..., n, d_in)``.
        W_query: Query matrix ``(d_in, d_out)``.
        W_key: Key matrix ``(d_in, d_out)``.
        W_value: Value matrix ``(d_in, d_out)``.

    Returns:
        Tuple of three ``(..., n, d_out)`` tensors.
    """
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling


def attention_scores(queries, keys):
    """Computes raw attention scores.

    Args:
        queries: ``(..., n, d_k)``.
        keys: ``(..., n, d_k)``.

    Returns:
        ``(..., n, n)`` tensor of dot products.
    """
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    """Applies the scaled softmax.

    Args:
        scores: Raw scores ``(..., n, n)``.
        d_k: Key dimension.

    Returns:
        Row-normalised weights.
    """
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    """Mixes value vectors.

    Args:
        attn_weights: ``(..., n, n)``.
        values: ``(..., n, d_v)``.

    Returns:
        ``(..., n, d_v)``.
    """
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Measures the variance of q.k with and without scaling.

    Args:
        dim: Length of the random vectors.
        num_trials: Number of (q, k) pairs.
        seed: Seed for the private generator.

    Returns:
        ``(variance_before, variance_after)`` as floats.
    """
    generator = torch.Generator()
    generator.manual_seed(seed)
    pairs = [(torch.randn(dim, generator=generator), torch.randn(dim, generator=generator))
             for _ in range(num_trials)]
    dots = torch.stack([torch.dot(q, k) for q, k in pairs])
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    """Self-attention with raw parameter matrices.

    Attributes:
        W_query: Query projection.
        W_key: Key projection.
        W_value: Value projection.
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        """Runs attention on one sequence ``(n, d_in)``."""
        queries = x @ self.W_query
        keys = x @ self.W_key
        values = x @ self.W_value
        weights = torch.softmax(queries @ keys.T / math.sqrt(keys.shape[-1]), dim=-1)
        return weights @ values


class SelfAttention_v2(nn.Module):
    """Self-attention with ``nn.Linear`` projections."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        """Runs attention on one sequence ``(n, d_in)``."""
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        weights = torch.softmax(queries @ keys.T / math.sqrt(keys.shape[-1]), dim=-1)
        return weights @ values


# %% step: masking


def causal_mask(context_length):
    """Builds the causal mask.

    Args:
        context_length: Sequence length ``n``.

    Returns:
        Boolean ``(n, n)`` tensor, True strictly above the diagonal.
    """
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights):
    """Zeroes future weights and renormalises each row.

    Args:
        attn_weights: Normalised weights ``(..., n, n)``.

    Returns:
        Masked, renormalised weights.
    """
    n = attn_weights.shape[-1]
    masked = torch.tril(attn_weights) if attn_weights.dim() >= 2 else attn_weights
    del n
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    """Masks the future with -inf and applies the scaled softmax.

    Args:
        scores: Raw scores ``(..., n, n)``.
        d_k: Key dimension.

    Returns:
        Causal attention weights.
    """
    hidden = causal_mask(scores.shape[-1])
    return torch.softmax(scores.masked_fill(hidden, -torch.inf) / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout on attention weights.

    Args:
        attn_weights: Any tensor.
        p: Drop probability.
        training: Whether dropout is active.

    Returns:
        The (possibly) dropped-out tensor.
    """
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    """Single-head causal self-attention.

    Args:
        d_in: Input size.
        d_out: Output size.
        context_length: Maximum sequence length.
        dropout: Dropout probability on the attention weights.
        qkv_bias: Whether the projections have a bias.
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        """Args: x: ``(b, n, d_in)``. Returns: ``(b, n, d_out)``."""
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.matmul(queries, keys.transpose(1, 2))
        scores = scores.masked_fill(self.mask[:n, :n], -torch.inf)
        weights = self.dropout(torch.softmax(scores / math.sqrt(keys.shape[-1]), dim=-1))
        return torch.matmul(weights, values)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """Concatenation of independent causal heads.

    Args:
        d_in: Input size.
        d_out: Per-head output size.
        context_length: Maximum sequence length.
        dropout: Dropout probability.
        num_heads: Number of heads.
        qkv_bias: Whether projections have a bias.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        """Returns ``(b, n, num_heads * d_out)``."""
        return torch.cat([head(x) for head in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention with head splitting.

    Args:
        d_in: Input size.
        d_out: Total output size (divisible by ``num_heads``).
        context_length: Maximum sequence length.
        dropout: Dropout probability on the attention weights.
        num_heads: Number of heads.
        qkv_bias: Whether projections have a bias.
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
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        """Args: x: ``(b, n, d_in)``. Returns: ``(b, n, d_out)``."""
        b, n, _ = x.shape
        queries = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(queries, keys.transpose(-2, -1))
        scores = scores.masked_fill(self.mask[:n, :n], -torch.inf)
        weights = self.dropout(torch.softmax(scores / math.sqrt(self.head_dim), dim=-1))
        context = torch.matmul(weights, values).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(context)
