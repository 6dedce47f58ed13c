import math

import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    return nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    torch_gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=torch_gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=torch_gen, dtype=torch.float64)
    raw = (q * k).sum(dim=-1)
    scaled = raw / math.sqrt(dim)
    return raw.var(unbiased=False).item(), scaled.var(unbiased=False).item()


class GPT2StyleAttentionCore(nn.Module):
    """The `_attn` part of a GPT-2 attention block, shared by all classes below."""

    def __init__(self, scale_attn_weights=True):
        super().__init__()
        self.scale_attn_weights = scale_attn_weights

    def forward(self, query, key, value, causal_mask=None, dropout=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        if self.scale_attn_weights:
            attn_weights = attn_weights / math.sqrt(value.size(-1))
        if causal_mask is not None:
            mask_value = torch.finfo(attn_weights.dtype).min
            attn_weights = torch.where(causal_mask, attn_weights, torch.tensor(mask_value, dtype=attn_weights.dtype))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        if dropout is not None:
            attn_weights = dropout(attn_weights)
        return torch.matmul(attn_weights, value)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.core = GPT2StyleAttentionCore()

    def forward(self, x):
        return self.core(x @ self.W_query, x @ self.W_key, x @ self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.core = GPT2StyleAttentionCore()

    def forward(self, x):
        return self.core(self.W_query(x), self.W_key(x), self.W_value(x))


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length), diagonal=1).to(torch.bool)


def mask_and_renormalize(attn_weights):
    allowed = ~causal_mask(attn_weights.size(-1)).to(attn_weights.device)
    kept = torch.where(allowed, attn_weights, torch.zeros((), dtype=attn_weights.dtype))
    return kept / kept.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hidden = causal_mask(scores.size(-1)).to(scores.device)
    scores = torch.where(hidden, torch.tensor(float("-inf"), dtype=scores.dtype), scores)
    return nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    keep = torch.rand_like(attn_weights) >= p
    return torch.where(keep, attn_weights / (1.0 - p), torch.zeros_like(attn_weights))


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.core = GPT2StyleAttentionCore(scale_attn_weights=False)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, hidden_states):
        seq_len = hidden_states.size(-2)
        allowed = self.mask[:seq_len, :seq_len] == 0
        return self.core(self.W_query(hidden_states), self.W_key(hidden_states), self.W_value(hidden_states),
                         allowed, self.dropout)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, hidden_states):
        return torch.cat([head(hidden_states) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.embed_dim = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.core = GPT2StyleAttentionCore(scale_attn_weights=False)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def _split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.num_heads, self.head_dim)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.embed_dim,))

    def forward(self, hidden_states):
        query = self._split_heads(self.W_query(hidden_states))
        key = self._split_heads(self.W_key(hidden_states))
        value = self._split_heads(self.W_value(hidden_states))
        seq_len = hidden_states.size(-2)
        allowed = self.mask[:seq_len, :seq_len] == 0
        attn_output = self.core(query, key, value, allowed, self.dropout)
        return self.out_proj(self._merge_heads(attn_output))
