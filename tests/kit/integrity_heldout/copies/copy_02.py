import math
import torch
from torch import nn


# %% step: projection

def init_qkv_weights(d_in, d_out):
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)


def project(x, W_query, W_key, W_value):
    qs = torch.einsum('...tc,cf->...tf', x, W_query)
    ks = torch.einsum('...tc,cf->...tf', x, W_key)
    vs = torch.einsum('...tc,cf->...tf', x, W_value)
    return qs, ks, vs


def _mix(qs, ks, vs, blocked=None, dropper=None):
    logits = torch.einsum('...qc,...kc->...qk', qs, ks) * qs.shape[-1] ** -0.5
    if blocked is not None:
        logits = logits.masked_fill(blocked, -torch.inf)
    probs = logits.softmax(-1)
    if dropper is not None:
        probs = dropper(probs)
    return torch.einsum('...qk,...kc->...qc', probs, vs)


# %% step: scaling

def attention_scores(queries, keys):
    return torch.einsum('...qc,...kc->...qk', queries, keys)


def scaled_attention_weights(scores, d_k):
    return (scores * d_k ** -0.5).softmax(-1)


def context_vectors(attn_weights, values):
    return torch.einsum('...qk,...kc->...qc', attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator()
    gen.manual_seed(seed)
    qs = torch.randn(num_trials, dim, generator=gen)
    ks = torch.randn(num_trials, dim, generator=gen)
    dots = torch.einsum('nc,nc->n', qs, ks)
    return dots.var().item(), (dots * dim ** -0.5).var().item()


# %% step: masking

def causal_mask(context_length):
    pos = torch.arange(context_length)
    return torch.einsum('i,j->ij', torch.ones(context_length), torch.ones(context_length)).bool() & (pos[None, :] > pos[:, None])


def causal_attention_weights(scores, d_k):
    logits = scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf)
    return (logits * d_k ** -0.5).softmax(-1)


def mask_and_renormalize(attn_weights):
    size = attn_weights.shape[-1]
    allowed = (~causal_mask(size)).to(attn_weights.dtype)
    probs = attn_weights * allowed
    return probs / probs.sum(-1, keepdim=True)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return _mix(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return _mix(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropper = nn.Dropout(dropout)
        self.register_buffer('blocked', causal_mask(context_length))

    def forward(self, x):
        t = x.shape[1]
        return _mix(self.W_query(x), self.W_key(x), self.W_value(x),
                    blocked=self.blocked[:t, :t], dropper=self.dropper)


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([hd(x) for hd in self.heads], -1)


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
        self.dropper = nn.Dropout(dropout)
        self.register_buffer('blocked', causal_mask(context_length))

    def forward(self, x):
        bs, t, _ = x.shape
        qs, ks, vs = (layer(x).unflatten(-1, (self.n_heads, -1)) for layer in (self.W_query, self.W_key, self.W_value))
        logits = torch.einsum('bqhc,bkhc->bhqk', qs, ks) * qs.shape[-1] ** -0.5
        logits = logits.masked_fill(self.blocked[:t, :t], -torch.inf)
        probs = self.dropper(logits.softmax(-1))
        merged = torch.einsum('bhqk,bkhc->bqhc', probs, vs).flatten(-2)
        return self.out_proj(merged)
