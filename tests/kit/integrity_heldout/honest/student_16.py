import math
import torch
from torch import nn

# %% step: projection

def init_qkv_weights(d_in, d_out):
    w_query = torch.rand(d_in, d_out)
    w_key = torch.rand(d_in, d_out)
    w_value = torch.rand(d_in, d_out)
    return w_query, w_key, w_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value

# %% step: scaling

def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(num_trials, dim, generator=g)
    b = torch.randn(num_trials, dim, generator=g)
    d = (a * b).sum(-1)
    return d.var().item(), (d / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        # 2-D here, so dim=1 is the last axis
        att = torch.softmax((q @ k.T) / math.sqrt(k.shape[1]), dim=1)
        return att @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        att = torch.softmax((q @ k.T) / math.sqrt(k.shape[1]), dim=1)
        return att @ v

# %% step: masking

def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length), 1).bool()


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    w = attn_weights * torch.tril(torch.ones(n, n))
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    s = scores.masked_fill(causal_mask(scores.shape[-1]), -torch.inf)
    return torch.softmax(s / math.sqrt(d_k), dim=-1)

# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p, training)

# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        att = (q @ k.transpose(1, 2)).masked_fill(self.mask[:n, :n], -torch.inf)
        # same as in SelfAttention: normalise along dim 1
        att = torch.softmax(att / math.sqrt(k.shape[-1]), dim=1)
        att = self.attn_drop(att)
        return att @ v

# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)

# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_heads = num_heads
        self.hd = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, d = x.shape[0], x.shape[1], self.n_heads * self.hd
        q = self.W_query(x).view(b, n, self.n_heads, self.hd).transpose(1, 2)
        k = self.W_key(x).view(b, n, self.n_heads, self.hd).transpose(1, 2)
        v = self.W_value(x).view(b, n, self.n_heads, self.hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)).masked_fill(self.mask[:n, :n], -torch.inf)
        att = self.attn_drop(torch.softmax(att / math.sqrt(self.hd), dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, n, d)
        return self.out_proj(y)
