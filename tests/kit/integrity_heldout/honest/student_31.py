import math
import torch
from torch import nn


# %% step: projection

def init_qkv_weights(d_in, d_out):
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)


def project(x, W_query, W_key, W_value):
    q = torch.einsum('...nd,de->...ne', x, W_query)
    k = torch.einsum('...nd,de->...ne', x, W_key)
    v = torch.einsum('...nd,de->...ne', x, W_value)
    return q, k, v


# %% step: scaling

def attention_scores(queries, keys):
    return torch.einsum('...id,...jd->...ij', queries, keys)


def scaled_attention_weights(scores, d_k):
    return (scores / math.sqrt(d_k)).softmax(-1)


def context_vectors(attn_weights, values):
    return torch.einsum('...ij,...jd->...id', attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator()
    rng.manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=rng)
    k = torch.randn(num_trials, dim, generator=rng)
    s = torch.einsum('td,td->t', q, k)
    return s.var().item(), (s / math.sqrt(dim)).var().item()


def _attend(q, k, v, hide=None, drop=None):
    s = torch.einsum('...id,...jd->...ij', q, k) / math.sqrt(q.shape[-1])
    if hide is not None:
        s = s.masked_fill(hide, -torch.inf)
    a = s.softmax(-1)
    if drop is not None:
        a = drop(a)
    return torch.einsum('...ij,...jd->...id', a, v)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return _attend(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: masking

def causal_mask(context_length):
    i = torch.arange(context_length)
    return torch.einsum('i,j->ij', torch.ones(context_length), torch.ones(context_length)).bool() & (i[None, :] > i[:, None])


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    keep = (~causal_mask(n)).to(attn_weights.dtype)
    w = attn_weights * keep
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    s = scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf)
    return (s / math.sqrt(d_k)).softmax(-1)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p)


# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        return _attend(self.W_query(x), self.W_key(x), self.W_value(x),
                       hide=self.mask[:n, :n], drop=self.dropout)


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], -1)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.h = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (lin(x).unflatten(-1, (self.h, -1)) for lin in (self.W_query, self.W_key, self.W_value))
        # q, k, v: (b, n, h, e); keep the head axis where it is and let einsum handle it
        s = torch.einsum('bihe,bjhe->bhij', q, k) / math.sqrt(q.shape[-1])
        s = s.masked_fill(self.mask[:n, :n], -torch.inf)
        a = self.dropout(s.softmax(-1))
        out = torch.einsum('bhij,bjhe->bihe', a, v).flatten(-2)
        return self.out_proj(out)
