"""Attention exercise -- written following "The Annotated Transformer" (Harvard NLP)."""

import copy
import math

import torch
from torch import nn
import torch.nn.functional as F


def clones(module, N):
    "Produce N identical layers."
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


def subsequent_mask(size):
    "Mask out subsequent positions."
    attn_shape = (1, size, size)
    subsequent = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return subsequent == 0


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


# %% step: projection


def init_qkv_weights(d_in, d_out):
    "Three random projection matrices, drawn q, k, v."
    w_q = torch.rand(d_in, d_out)
    w_k = torch.rand(d_in, d_out)
    w_v = torch.rand(d_in, d_out)
    return w_q, w_k, w_v


def project(x, W_query, W_key, W_value):
    "Apply the three projections."
    return tuple(torch.matmul(x, w) for w in (W_query, W_key, W_value))


# %% step: scaling


def attention_scores(queries, keys):
    "Raw dot products."
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    "Scaled softmax."
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


def context_vectors(attn_weights, values):
    "Weighted sum of values."
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    "Empirical variance of q.k, unscaled and scaled."
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen)
    k = torch.randn(num_trials, dim, generator=gen)
    d = torch.einsum("nd,nd->n", q, k)
    return d.var().item(), (d / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    "Self-attention with raw parameter matrices."

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        out, _ = attention(q, k, v)
        return out


class SelfAttention_v2(nn.Module):
    "Self-attention with Linear layers."

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.linears = clones(nn.Linear(d_in, d_out, bias=qkv_bias), 3)
        for lin in self.linears:
            lin.reset_parameters()

    def forward(self, x):
        q, k, v = [lin(x) for lin in self.linears]
        out, _ = attention(q, k, v)
        return out


# %% step: masking


def causal_mask(context_length):
    "True strictly above the diagonal (positions to hide)."
    return ~subsequent_mask(context_length)[0]


def mask_and_renormalize(attn_weights):
    "Zero the upper triangle, renormalise the rows."
    keep = subsequent_mask(attn_weights.size(-1))[0].to(attn_weights.dtype)
    masked = attn_weights * keep
    return masked / masked.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    "Masked, scaled softmax."
    hide = causal_mask(scores.size(-1))
    scores = scores.masked_fill(hide, float("-inf"))
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    "Inverted dropout."
    return F.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    "Single causal head with dropout on p_attn."

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.linears = clones(nn.Linear(d_in, d_out, bias=qkv_bias), 3)
        for lin in self.linears:
            lin.reset_parameters()
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", subsequent_mask(context_length))
        self.attn = None

    def forward(self, x):
        n = x.size(1)
        query, key, value = [lin(x) for lin in self.linears]
        out, self.attn = attention(query, key, value,
                                   mask=self.mask[:, :n, :n], dropout=self.dropout)
        return out


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    "Concatenate several CausalAttention heads."

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        ])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    "Take in model size and number of heads."

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        # We assume d_v always equals d_k
        self.d_k = d_out // num_heads
        self.h = num_heads
        self.linears = nn.ModuleList(
            [nn.Linear(d_in, d_out, bias=qkv_bias) for _ in range(3)]
            + [nn.Linear(d_out, d_out)]
        )
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("mask", subsequent_mask(context_length).unsqueeze(0))

    def forward(self, x):
        nbatches, n = x.size(0), x.size(1)

        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin in self.linears[:3]
        ]

        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(query, key, value,
                                 mask=self.mask[:, :, :n, :n], dropout=self.dropout)

        # 3) "Concat" using a view and apply a final linear.
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.linears[-1](x)
