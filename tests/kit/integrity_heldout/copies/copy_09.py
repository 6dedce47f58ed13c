import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    a_q = torch.rand(d_in, d_out)
    a_k = torch.rand(d_in, d_out)
    a_v = torch.rand(d_in, d_out)
    return a_q, a_k, a_v


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-1, -2)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


_DEBUG = False


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    dp = (q * k).sum(-1)
    mean = dp.mean()
    v_raw = ((dp - mean) ** 2).sum() / (num_trials - 1)
    v_scl = v_raw / dim
    if _DEBUG:
        print('variance', v_raw.item(), v_scl.item())
    return v_raw.item(), v_scl.item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        qm, km, vm = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return torch.softmax(qm @ km.transpose(-1, -2) / math.sqrt(km.shape[-1]), dim=-1) @ vm


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        qm, km, vm = self.W_query(x), self.W_key(x), self.W_value(x)
        return torch.softmax(qm @ km.transpose(-1, -2) / math.sqrt(km.shape[-1]), dim=-1) @ vm


# %% step: masking


def causal_mask(context_length):
    return torch.ones(context_length, context_length).tril().logical_not()


def mask_and_renormalize(attn_weights):
    lower_ones = torch.ones_like(attn_weights).tril()
    kept_w = attn_weights * lower_ones
    return kept_w / kept_w.sum(-1).unsqueeze(-1)


def causal_attention_weights(scores, d_k):
    return torch.softmax(scores.masked_fill(causal_mask(scores.size(-1)), -torch.inf) / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return attn_weights * torch.empty_like(attn_weights).bernoulli_(1 - p) / (1 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        L = x.size(1)
        qm, km, vm = self.W_query(x), self.W_key(x), self.W_value(x)
        logits = (qm @ km.transpose(-1, -2)).masked_fill(self.mask[:L, :L], -torch.inf)
        return self.dropout(torch.softmax(logits / math.sqrt(km.size(-1)), dim=-1)) @ vm


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_h = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        N, L, _ = x.shape
        qm = torch.stack(self.W_query(x).chunk(self.n_h, dim=-1), dim=1)   
        km = torch.stack(self.W_key(x).chunk(self.n_h, dim=-1), dim=1)
        vm = torch.stack(self.W_value(x).chunk(self.n_h, dim=-1), dim=1)
        logits = (qm @ km.transpose(-1, -2)).masked_fill(self.mask[:L, :L], -torch.inf)
        probs = self.dropout(torch.softmax(logits / math.sqrt(qm.size(-1)), dim=-1))
        out = torch.cat((probs @ vm).unbind(dim=1), dim=-1)                  
        return self.out_proj(out)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """All heads side by side."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        st = torch.stack([h(x) for h in self.heads], dim=2)   
        return st.flatten(start_dim=2)                        
