"""Attention exercise."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def _attention_core(query, key, value, mask_bool=None, drop_p=0.0, is_training=False):
    logits = torch.matmul(query, key.transpose(-2, -1)) * (1.0 / math.sqrt(key.shape[-1]))
    if mask_bool is not None:
        logits = logits.masked_fill(mask_bool, -math.inf)
    probs = F.softmax(logits, dim=-1)
    probs = F.dropout(probs, p=drop_p, training=is_training)
    return torch.matmul(probs, value)


# %% step: projection


def init_qkv_weights(d_in, d_out):
    first = torch.rand(d_in, d_out)
    second = torch.rand(d_in, d_out)
    third = torch.rand(d_in, d_out)
    return first, second, third


def project(x, W_query, W_key, W_value):
    # F.linear expects (out, in) -> pass transposed matrices
    return F.linear(x, W_query.t()), F.linear(x, W_key.t()), F.linear(x, W_value.t())


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores * (1.0 / math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    qm = torch.randn(num_trials, dim, generator=gen)
    km = torch.randn(num_trials, dim, generator=gen)
    diag = torch.diagonal(torch.matmul(qm, km.t()))
    return diag.var().item(), diag.mul(1.0 / math.sqrt(dim)).var().item()


# %% step: masking


def causal_mask(context_length):
    idx = torch.arange(context_length)
    return idx.unsqueeze(1) < idx.unsqueeze(0)


def causal_attention_weights(scores, d_k):
    filled = scores.masked_fill(causal_mask(scores.shape[-1]), -math.inf)
    return F.softmax(filled * (1.0 / math.sqrt(d_k)), dim=-1)


def mask_and_renormalize(attn_weights):
    kept = attn_weights * (~causal_mask(attn_weights.shape[-1])).to(attn_weights.dtype)
    return kept / kept.sum(-1, keepdim=True)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p=p, training=training)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return _attention_core(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return _attention_core(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.drop_p = dropout
        self.register_buffer("causal", causal_mask(context_length))

    def forward(self, x):
        seq = x.shape[1]
        return _attention_core(self.W_query(x), self.W_key(x), self.W_value(x),
                               mask_bool=self.causal[:seq, :seq], drop_p=self.drop_p,
                               is_training=self.training)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        outs = [head(x) for head in self.heads]
        return torch.cat(outs, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.drop_p = dropout
        self.register_buffer("causal", causal_mask(context_length))

    def forward(self, x):
        width = self.out_proj.in_features
        bsz, seq = x.shape[0], x.shape[1]
        per_head = width // self.n_heads
        query, key, value = [
            t.view(bsz, seq, self.n_heads, per_head).permute(0, 2, 1, 3)
            for t in (self.W_query(x), self.W_key(x), self.W_value(x))
        ]
        out = _attention_core(query, key, value, mask_bool=self.causal[:seq, :seq],
                              drop_p=self.drop_p, is_training=self.training)
        return self.out_proj(out.permute(0, 2, 1, 3).reshape(bsz, seq, width))
