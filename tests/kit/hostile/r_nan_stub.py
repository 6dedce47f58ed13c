"""Red team 2 (score from a stub): answers of exactly the expected shape and dtype whose every value is NaN
(a quiet NaN with a payload, and its negative). Every comparison with NaN is false: a judge that fails an
answer only when `(a - b).abs() > tol` (or `not allclose` is mis-written as `any(diff > tol)`, or a
variance/statistics check tests `x < low or x > high`) passes it. Modules hold no layers (no structure
point is earned honestly); their forward answers NaN too.

base: stub
class: 4
run: main
"""

import struct as _struct

import torch as _torch
from torch import nn as _nn

_NAN = _struct.unpack("<f", _struct.pack("<I", 0x7FC0BEEF))[0]


def _nan(*shape):
    value = _torch.full(tuple(int(size) for size in shape), _NAN)
    value.view(-1)[1::2] = -_NAN if value.numel() > 1 else value.view(-1)[1::2]
    return value


def init_qkv_weights(d_in, d_out):
    return _nan(d_in, d_out), _nan(d_in, d_out), _nan(d_in, d_out)


def project(x, W_query, W_key, W_value):
    return tuple(_nan(*x.shape[:-1], weight.shape[-1]) for weight in (W_query, W_key, W_value))


def attention_scores(queries, keys):
    return _nan(*queries.shape[:-1], keys.shape[-2])


def scaled_attention_weights(scores, d_k):
    return _nan(*scores.shape)


def context_vectors(attn_weights, values):
    return _nan(*attn_weights.shape[:-1], values.shape[-1])


def causal_mask(context_length):
    return _nan(context_length, context_length)


def mask_and_renormalize(attn_weights):
    return _nan(*attn_weights.shape)


def causal_attention_weights(scores, d_k):
    return _nan(*scores.shape)


def attention_dropout(attn_weights, p, training=True):
    return _nan(*attn_weights.shape)


def dot_product_variance(dim, num_trials=1000, seed=0):
    return _NAN, _NAN


class _NanModule(_nn.Module):
    def __init__(self, d_in, d_out, *args, **kwargs):
        super().__init__()
        self.d_out = d_out

    def forward(self, x):
        return _nan(*x.shape[:-1], self.d_out)


class SelfAttention_v1(_NanModule):
    pass


class SelfAttention_v2(_NanModule):
    pass


class CausalAttention(_NanModule):
    pass


class MultiHeadAttentionWrapper(_NanModule):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out * num_heads)


class MultiHeadAttention(_NanModule):
    pass
