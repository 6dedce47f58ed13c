"""
Attention mechanisms exercise.

I like to write down what every line does so that when I come back to this
for the exam I remember the reasoning and not just the code. Sorry for the
wall of comments!
"""

import math  # needed for math.sqrt when scaling the scores

import torch  # the tensor library
from torch import nn  # neural network building blocks (Module, Linear, Dropout, ...)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    """Create the three projection matrices.

    The order of the three calls to torch.rand is important: the grader seeds
    the random generator once and then expects the query matrix to be drawn
    first, the key matrix second and the value matrix third.
    """
    # Query weights: maps each d_in-dimensional token to a d_out-dimensional query
    query_weight_matrix = torch.rand(d_in, d_out)
    # Key weights: same shape, used to build the "addresses" that queries match against
    key_weight_matrix = torch.rand(d_in, d_out)
    # Value weights: same shape, the content that gets mixed together
    value_weight_matrix = torch.rand(d_in, d_out)
    # Return them as a tuple, in the documented order
    return query_weight_matrix, key_weight_matrix, value_weight_matrix


def project(x, W_query, W_key, W_value):
    """Multiply the inputs with each of the three matrices."""
    # x has shape (..., n, d_in) and each W has shape (d_in, d_out)
    # so x @ W has shape (..., n, d_out) thanks to broadcasting of matmul
    query_vectors = x @ W_query  # one query per token
    key_vectors = x @ W_key  # one key per token
    value_vectors = x @ W_value  # one value per token
    return query_vectors, key_vectors, value_vectors


# %% step: scaling


def attention_scores(queries, keys):
    """Dot product of every query with every key."""
    # We need keys with the last two axes swapped: (..., n, d_k) -> (..., d_k, n)
    # Using transpose(-2, -1) instead of .T makes this work for batched input too
    keys_transposed = keys.transpose(-2, -1)
    # (..., n, d_k) @ (..., d_k, n) -> (..., n, n)
    scores = queries @ keys_transposed
    return scores


def scaled_attention_weights(scores, d_k):
    """Scale the scores and normalise each row with softmax."""
    # Divide by sqrt(d_k) so the variance of the scores does not grow with d_k
    scaling_factor = math.sqrt(d_k)
    scaled_scores = scores / scaling_factor
    # Softmax over the LAST axis: every query's weights over all keys sum to one
    weights = torch.softmax(scaled_scores, dim=-1)
    return weights


def context_vectors(attn_weights, values):
    """Weighted sum of the value vectors."""
    # (..., n, n) @ (..., n, d_v) -> (..., n, d_v)
    # row i of the result = sum_j weight[i, j] * value[j]
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Empirical variance of q.k before and after dividing by sqrt(dim)."""
    # A private generator so that we do not disturb the global random state
    generator = torch.Generator()
    generator.manual_seed(seed)
    # Draw all the query vectors at once: shape (num_trials, dim)
    all_queries = torch.randn(num_trials, dim, generator=generator)
    # Draw all the key vectors at once: shape (num_trials, dim)
    all_keys = torch.randn(num_trials, dim, generator=generator)
    # Row-wise dot product: elementwise multiply then sum over the feature axis
    dot_products = (all_queries * all_keys).sum(dim=1)
    # Same numbers, divided by sqrt(dim)
    scaled_dot_products = dot_products / math.sqrt(dim)
    # Variance (unbiased) of each, turned into plain Python floats
    variance_before = dot_products.var().item()
    variance_after = scaled_dot_products.var().item()
    return variance_before, variance_after


class SelfAttention_v1(nn.Module):
    """Self-attention whose weights are plain nn.Parameter matrices."""

    def __init__(self, d_in, d_out):
        super().__init__()  # always call the parent constructor first
        # nn.Parameter registers the tensor as trainable
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        # Step 1: project the inputs
        query_vectors, key_vectors, value_vectors = project(x, self.W_query, self.W_key, self.W_value)
        # Step 2: raw scores
        scores = attention_scores(query_vectors, key_vectors)
        # Step 3: scaled softmax, d_k is the size of a key vector
        weights = scaled_attention_weights(scores, key_vectors.shape[-1])
        # Step 4: mix the values
        return context_vectors(weights, value_vectors)


class SelfAttention_v2(nn.Module):
    """Self-attention with nn.Linear layers instead of raw matrices."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        # nn.Linear stores weight as (d_out, d_in) and computes x @ W.T (+ b)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        # Step 1: project with the linear layers
        query_vectors = self.W_query(x)
        key_vectors = self.W_key(x)
        value_vectors = self.W_value(x)
        # Steps 2-4 are exactly as in v1, so I reuse the helper functions
        scores = attention_scores(query_vectors, key_vectors)
        weights = scaled_attention_weights(scores, key_vectors.shape[-1])
        return context_vectors(weights, value_vectors)


# %% step: masking


def causal_mask(context_length):
    """Boolean mask, True where the position is in the future (hidden)."""
    # A square matrix full of ones ...
    ones = torch.ones(context_length, context_length)
    # ... keep only what is strictly above the main diagonal ...
    upper_triangle = torch.triu(ones, diagonal=1)
    # ... and turn it into booleans
    return upper_triangle.bool()


def mask_and_renormalize(attn_weights):
    """The 'simple' masking approach: zero the future and renormalise."""
    # Number of tokens is the size of the last axis
    num_tokens = attn_weights.shape[-1]
    # Lower triangle (including diagonal) of ones = positions that are allowed
    allowed = torch.tril(torch.ones(num_tokens, num_tokens))
    # Multiply to zero out the future
    masked_weights = attn_weights * allowed
    # Row sums, keepdim so we can broadcast in the division
    row_sums = masked_weights.sum(dim=-1, keepdim=True)
    # Renormalise so each row sums to one again
    return masked_weights / row_sums


def causal_attention_weights(scores, d_k):
    """The efficient approach: -inf before the softmax."""
    # Which entries must be hidden
    hidden = causal_mask(scores.shape[-1])
    # Put -inf there; exp(-inf) = 0 so they get zero weight after softmax
    masked_scores = scores.masked_fill(hidden, -torch.inf)
    # Same scaled softmax as before
    return scaled_attention_weights(masked_scores, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout on the attention weights."""
    # At evaluation time dropout is the identity
    if not training:
        return attn_weights
    # Keep each entry with probability 1 - p
    keep_mask = torch.rand_like(attn_weights) >= p
    # Survivors are scaled by 1 / (1 - p) so the expected value is unchanged
    scale = 1.0 / (1.0 - p)
    return attn_weights * keep_mask * scale


# %% step: causal_attention


class CausalAttention(nn.Module):
    """Single-head causal attention with dropout on the weights."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        # Remember the output size for the scaling later
        self.d_out = d_out
        # The three projections
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        # Dropout layer (only active in train mode)
        self.dropout = nn.Dropout(dropout)
        # A buffer moves with .to(device) but is not a trainable parameter
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        # x: (batch, num_tokens, d_in)
        batch_size, num_tokens, _ = x.shape
        # Projections: each (batch, num_tokens, d_out)
        query_vectors = self.W_query(x)
        key_vectors = self.W_key(x)
        value_vectors = self.W_value(x)
        # Scores: (batch, num_tokens, num_tokens)
        scores = query_vectors @ key_vectors.transpose(1, 2)
        # Cut the mask down to the actual sequence length and fill in place
        scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)
        # Scaled softmax over the keys
        weights = torch.softmax(scores / math.sqrt(self.d_out), dim=-1)
        # Randomly drop some weights (training only)
        weights = self.dropout(weights)
        # Weighted sum of values: (batch, num_tokens, d_out)
        return weights @ value_vectors


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """Stack several independent CausalAttention heads."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        # ModuleList so that the heads' parameters are registered
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        # Run every head on the same input
        head_outputs = [head(x) for head in self.heads]
        # Concatenate along the feature axis: (batch, num_tokens, num_heads * d_out)
        return torch.cat(head_outputs, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Efficient multi-head attention: one big projection per role, split into heads."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        # Every head gets the same number of features
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        # One projection per role, covering all heads at once
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        # Final projection that mixes the heads back together
        self.out_proj = nn.Linear(d_out, d_out)
        # Dropout on the attention weights
        self.dropout = nn.Dropout(dropout)
        # Causal mask buffer
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        # x: (batch, num_tokens, d_in)
        batch_size, num_tokens, _ = x.shape
        # Project: (batch, num_tokens, d_out)
        query_vectors = self.W_query(x)
        key_vectors = self.W_key(x)
        value_vectors = self.W_value(x)
        # Split the last axis into heads: (batch, num_tokens, num_heads, head_dim)
        query_vectors = query_vectors.view(batch_size, num_tokens, self.num_heads, self.head_dim)
        key_vectors = key_vectors.view(batch_size, num_tokens, self.num_heads, self.head_dim)
        value_vectors = value_vectors.view(batch_size, num_tokens, self.num_heads, self.head_dim)
        # Move heads in front of tokens: (batch, num_heads, num_tokens, head_dim)
        query_vectors = query_vectors.transpose(1, 2)
        key_vectors = key_vectors.transpose(1, 2)
        value_vectors = value_vectors.transpose(1, 2)
        # Scores per head: (batch, num_heads, num_tokens, num_tokens)
        scores = query_vectors @ key_vectors.transpose(2, 3)
        # Hide the future (mask broadcasts over batch and heads)
        scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)
        # Scaled softmax, each head uses its own head_dim
        weights = torch.softmax(scores / math.sqrt(self.head_dim), dim=-1)
        # Dropout on the weights
        weights = self.dropout(weights)
        # Context per head, then heads back behind tokens: (batch, num_tokens, num_heads, head_dim)
        context = (weights @ value_vectors).transpose(1, 2)
        # Merge the heads: (batch, num_tokens, d_out); contiguous() is needed before view
        context = context.contiguous().view(batch_size, num_tokens, self.d_out)
        # Final output projection
        return self.out_proj(context)
