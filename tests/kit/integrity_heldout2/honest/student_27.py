"""
My solution for the attention exercises.

I am new to PyTorch so I wrote a lot of comments for myself and added shape
checks with assert so I notice when something is wrong.
"""

import math

import torch
from torch import nn


# ===========================================================================
# STEP 1 - PROJECTION
# ===========================================================================

def init_qkv_weights(d_in, d_out):
    # The caller sets the seed. The order matters, so: query first, key second, value third.
    W_query = torch.rand(d_in, d_out)  # shape (d_in, d_out)
    W_key = torch.rand(d_in, d_out)  # shape (d_in, d_out)
    W_value = torch.rand(d_in, d_out)  # shape (d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    # x has shape (..., n, d_in). Multiplying by a (d_in, d_out) matrix gives (..., n, d_out).
    queries = torch.matmul(x, W_query)
    keys = torch.matmul(x, W_key)
    values = torch.matmul(x, W_value)
    # all three should have the same shape
    assert queries.shape == keys.shape == values.shape
    return queries, keys, values


# ===========================================================================
# STEP 2 - SCALING
# ===========================================================================

def attention_scores(queries, keys):
    # I need every query dotted with every key.
    # keys: (..., n, d_k)  ->  transpose the last two axes  ->  (..., d_k, n)
    keys_t = keys.transpose(-2, -1)
    # (..., n, d_k) @ (..., d_k, n)  ->  (..., n, n)
    scores = torch.matmul(queries, keys_t)
    return scores


def scaled_attention_weights(scores, d_k):
    # Step A: divide by the square root of the key dimension (keeps the variance near 1)
    scaled_scores = scores / math.sqrt(d_k)
    # Step B: softmax over the LAST axis so every ROW sums to one
    weights = torch.softmax(scaled_scores, dim=-1)
    return weights


def context_vectors(attn_weights, values):
    # every output row is a weighted sum of the value rows
    # (..., n, n) @ (..., n, d_v)  ->  (..., n, d_v)
    context = torch.matmul(attn_weights, values)
    return context


def dot_product_variance(dim, num_trials=1000, seed=0):
    # my own generator so that the global seed is not touched
    generator = torch.Generator()
    generator.manual_seed(seed)

    # num_trials query vectors and num_trials key vectors (standard normal)
    q = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)
    assert q.shape == (num_trials, dim)

    # dot product of row i of q with row i of k, for every i
    dot_products = torch.sum(q * k, dim=1)
    assert dot_products.shape == (num_trials,)

    # the same dot products divided by sqrt(dim)
    scaled_dot_products = dot_products / math.sqrt(dim)

    # variance (unbiased=False, like numpy's default)
    variance_before = torch.var(dot_products, unbiased=False).item()
    variance_after = torch.var(scaled_dot_products, unbiased=False).item()
    return variance_before, variance_after


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        # nn.Parameter so that PyTorch knows these are trainable
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        # x: (n, d_in)
        queries = torch.matmul(x, self.W_query)  # (n, d_out)
        keys = torch.matmul(x, self.W_key)  # (n, d_out)
        values = torch.matmul(x, self.W_value)  # (n, d_out)

        scores = torch.matmul(queries, keys.T)  # (n, n)
        d_k = keys.shape[-1]
        weights = torch.softmax(scores / math.sqrt(d_k), dim=-1)  # (n, n)

        context = torch.matmul(weights, values)  # (n, d_out)
        return context


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        # nn.Linear stores the weight as (d_out, d_in) and computes x @ weight.T
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_query(x)  # (n, d_out)
        keys = self.W_key(x)  # (n, d_out)
        values = self.W_value(x)  # (n, d_out)

        scores = torch.matmul(queries, keys.T)  # (n, n)
        d_k = keys.shape[-1]
        weights = torch.softmax(scores / math.sqrt(d_k), dim=-1)

        context = torch.matmul(weights, values)  # (n, d_out)
        return context


# ===========================================================================
# STEP 3 - MASKING
# ===========================================================================

def causal_mask(context_length):
    # start with all ones
    ones = torch.ones(context_length, context_length)
    # keep only the part strictly above the diagonal (diagonal=1 means "start one above")
    upper = torch.triu(ones, diagonal=1)
    # convert to True/False: True means "this position is in the future, hide it"
    mask = upper.bool()
    return mask


def mask_and_renormalize(attn_weights):
    # how many tokens?
    n = attn_weights.shape[-1]
    # True where hidden
    hidden = causal_mask(n).to(attn_weights.device)
    # put zeros in the hidden places
    masked = attn_weights.masked_fill(hidden, 0.0)
    # the rows do not sum to one any more, so divide every row by its sum
    row_sums = masked.sum(dim=-1, keepdim=True)
    renormalized = masked / row_sums
    return renormalized


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    hidden = causal_mask(n).to(scores.device)
    # -inf becomes 0 after the softmax (e^-inf = 0)
    masked_scores = scores.masked_fill(hidden, float("-inf"))
    weights = torch.softmax(masked_scores / math.sqrt(d_k), dim=-1)
    return weights


# ===========================================================================
# STEP 4 - DROPOUT
# ===========================================================================

def attention_dropout(attn_weights, p, training=True):
    # In evaluation mode dropout does nothing.
    if not training:
        return attn_weights
    # Special case: p = 1 drops everything (and 1/(1-p) would divide by zero).
    if p == 1:
        return torch.zeros_like(attn_weights)
    # random numbers in [0, 1); keep a weight when its number is >= p (probability 1 - p)
    random_numbers = torch.rand_like(attn_weights)
    keep = random_numbers >= p
    # zero the dropped ones, scale the kept ones up by 1 / (1 - p)
    result = attn_weights * keep / (1 - p)
    return result


# ===========================================================================
# STEP 5 - CAUSAL ATTENTION CLASS
# ===========================================================================

class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # a buffer is saved with the model and moved to the GPU together with it,
        # but it is not trained
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        # x: (batch, num_tokens, d_in)
        batch, num_tokens, d_in = x.shape

        queries = self.W_query(x)  # (batch, num_tokens, d_out)
        keys = self.W_key(x)  # (batch, num_tokens, d_out)
        values = self.W_value(x)  # (batch, num_tokens, d_out)

        # transpose(1, 2) swaps tokens and features of the keys, the batch axis stays first
        scores = torch.matmul(queries, keys.transpose(1, 2))  # (batch, num_tokens, num_tokens)

        # the mask was made for context_length tokens, but x may be shorter: cut it
        hidden = self.mask.bool()[:num_tokens, :num_tokens]
        scores = scores.masked_fill(hidden, float("-inf"))

        weights = torch.softmax(scores / math.sqrt(keys.shape[-1]), dim=-1)
        weights = self.dropout(weights)  # dropout on the attention weights

        context = torch.matmul(weights, values)  # (batch, num_tokens, d_out)
        return context


# ===========================================================================
# STEP 6 - WRAPPER
# ===========================================================================

class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        # ModuleList (not a normal list!) so the heads' parameters are registered
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        # each head gives (batch, num_tokens, d_out); glue them on the last axis
        head_outputs = [head(x) for head in self.heads]
        return torch.cat(head_outputs, dim=-1)  # (batch, num_tokens, num_heads * d_out)


# ===========================================================================
# STEP 7 - MULTI-HEAD ATTENTION
# ===========================================================================

class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads  # features per head

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # mixes the heads at the end
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        batch, num_tokens, d_in = x.shape

        queries = self.W_query(x)  # (batch, num_tokens, d_out)
        keys = self.W_key(x)
        values = self.W_value(x)

        # split the last axis into (num_heads, head_dim)
        queries = queries.view(batch, num_tokens, self.num_heads, self.head_dim)
        keys = keys.view(batch, num_tokens, self.num_heads, self.head_dim)
        values = values.view(batch, num_tokens, self.num_heads, self.head_dim)

        # move the heads axis next to the batch axis: (batch, num_heads, num_tokens, head_dim)
        queries = queries.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)

        # scores per head: (batch, num_heads, num_tokens, num_tokens)
        scores = torch.matmul(queries, keys.transpose(2, 3))
        hidden = self.mask.bool()[:num_tokens, :num_tokens]
        scores = scores.masked_fill(hidden, float("-inf"))

        weights = torch.softmax(scores / math.sqrt(self.head_dim), dim=-1)
        weights = self.dropout(weights)

        context = torch.matmul(weights, values)  # (batch, num_heads, num_tokens, head_dim)
        # put the tokens axis back in second place BEFORE merging the heads
        context = context.transpose(1, 2)  # (batch, num_tokens, num_heads, head_dim)
        context = context.contiguous().view(batch, num_tokens, self.d_out)
        assert context.shape == (batch, num_tokens, self.d_out)

        return self.out_proj(context)
