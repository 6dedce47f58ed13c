"""Red team (issue 26, forged shapes): a stub that answers every step with an empty tensor of shape
(0, 1, 1, 1, 1). It broadcasts against any expected answer of up to four dimensions to an empty result, on
which `allclose`, `(a - b).abs() <= tol` and `.all()` are all true: a judge that compares before it checks
shape and element count gives it the points. The modules hold no layers (no structure points are earned
honestly); dot_product_variance reports that the attack ran.

base: stub
class: 4
run: main
"""

import torch as _torch
from torch import nn as _nn


def _empty(dtype=_torch.float32):
    return _torch.empty(0, 1, 1, 1, 1, dtype=dtype)


def init_qkv_weights(d_in, d_out):
    return _empty(), _empty(), _empty()


def project(x, W_query, W_key, W_value):
    return _empty(), _empty(), _empty()


def attention_scores(queries, keys):
    return _empty()


def scaled_attention_weights(scores, d_k):
    return _empty()


def context_vectors(attn_weights, values):
    return _empty()


def causal_mask(context_length):
    return _empty(_torch.bool)


def mask_and_renormalize(attn_weights):
    return _empty()


def causal_attention_weights(scores, d_k):
    return _empty()


def attention_dropout(attn_weights, p, training=True):
    return _empty()


def dot_product_variance(dim, num_trials=1000, seed=0):
    raise RuntimeError("RTEAM r_forged_empty ran: every other answer is an empty (0, 1, 1, 1, 1) tensor")


class _Empty(_nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return _empty()


class SelfAttention_v1(_Empty):
    pass


class SelfAttention_v2(_Empty):
    pass


class CausalAttention(_Empty):
    pass


class MultiHeadAttentionWrapper(_Empty):
    pass


class MultiHeadAttention(_Empty):
    pass
