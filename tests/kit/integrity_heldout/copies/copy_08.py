import math

import torch
from torch import nn


# %% step: projection


def init_qkv_weights(d_in, d_out):
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    q_proj = torch.matmul(x, W_query)
    k_proj = torch.matmul(x, W_key)
    v_proj = torch.matmul(x, W_value)
    return q_proj, k_proj, v_proj


# %% step: scaling


def attention_scores(queries, keys):
    k_transposed = keys.transpose(-2, -1)
    return torch.matmul(queries, k_transposed)


def scaled_attention_weights(scores, d_k):
    denom = d_k ** -0.5
    return torch.softmax(scores * denom, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    dot_values = []
    for _ in range(num_trials):
        q_sample = torch.randn(dim, generator=g)
        k_sample = torch.randn(dim, generator=g)
        dot_values.append(torch.inner(q_sample, k_sample))
    dots = torch.stack(dot_values)
    var_unscaled = dots.var().item()
    var_scaled = (dots / math.sqrt(dim)).var().item()
    return var_unscaled, var_scaled


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.out_features_ = d_out

    def forward(self, x):
        q_proj, k_proj, v_proj = project(x, self.W_query, self.W_key, self.W_value)
        logits = attention_scores(q_proj, k_proj)
        probs = scaled_attention_weights(logits, self.out_features_)
        return context_vectors(probs, v_proj)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_features_ = d_out

    def forward(self, x):
        q_proj = self.W_query(x)
        k_proj = self.W_key(x)
        v_proj = self.W_value(x)
        probs = scaled_attention_weights(attention_scores(q_proj, k_proj), self.out_features_)
        return context_vectors(probs, v_proj)


# %% step: masking


def causal_mask(context_length):
    all_ones = torch.ones(context_length, context_length)
    upper_tri = torch.triu(all_ones, diagonal=1)
    return upper_tri.to(dtype=torch.bool)


def mask_and_renormalize(attn_weights):
    seq_len = attn_weights.shape[-1]
    lower_tri = torch.tril(torch.ones(seq_len, seq_len))
    masked_w = attn_weights * lower_tri
    row_sum = masked_w.sum(dim=-1, keepdim=True)
    return masked_w / row_sum


def causal_attention_weights(scores, d_k):
    hidden = causal_mask(scores.shape[-1])
    masked_logits = scores.masked_fill(hidden, -torch.inf)
    return scaled_attention_weights(masked_logits, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    keep_p = 1.0 - p
    keep_mask = torch.rand(attn_weights.shape, device=attn_weights.device) < keep_p
    return attn_weights * keep_mask / keep_p


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("causal_buf", causal_mask(context_length))
        self.out_features_ = d_out

    def forward(self, x):
        bsz, seq_len, _d = x.shape
        q_proj = self.W_query(x)
        k_proj = self.W_key(x)
        v_proj = self.W_value(x)
        logits = torch.matmul(q_proj, k_proj.transpose(1, 2))
        logits = logits.masked_fill(self.causal_buf[:seq_len, :seq_len], -torch.inf)
        probs = torch.softmax(logits * self.out_features_ ** -0.5, dim=-1)
        probs = self.attn_drop(probs)
        return torch.matmul(probs, v_proj)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.out_features_ = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("causal_buf", causal_mask(context_length))

    def _split_heads(self, t, bsz, seq_len):
        return t.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        bsz, seq_len, _d = x.shape
        q_proj = self._split_heads(self.W_query(x), bsz, seq_len)
        k_proj = self._split_heads(self.W_key(x), bsz, seq_len)
        v_proj = self._split_heads(self.W_value(x), bsz, seq_len)
        logits = torch.matmul(q_proj, k_proj.transpose(2, 3))
        logits = logits.masked_fill(self.causal_buf[:seq_len, :seq_len], -torch.inf)
        probs = self.attn_drop(torch.softmax(logits * self.head_dim ** -0.5, dim=-1))
        merged = torch.matmul(probs, v_proj).transpose(1, 2).contiguous()
        merged = merged.view(bsz, seq_len, self.out_features_)
        return self.out_proj(merged)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        heads = []
        for _i in range(num_heads):
            heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.heads = nn.ModuleList(heads)

    def forward(self, x):
        outs = [h(x) for h in self.heads]
        return torch.cat(outs, dim=-1)
