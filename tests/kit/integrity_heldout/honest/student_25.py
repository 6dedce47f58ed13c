import math
import torch
import torch.nn as nn
from torch.nn import functional as F

torch.manual_seed(1337)  # from the lecture, harmless

# %% step: projection


def init_qkv_weights(d_in, d_out):
    Wq = torch.rand((d_in, d_out))
    Wk = torch.rand((d_in, d_out))
    Wv = torch.rand((d_in, d_out))
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling


def attention_scores(queries, keys):
    # every token emits a query and a key; affinities = dot products
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    # "scaled" attention: keeps the variance of wei around 1 at init
    return F.softmax(scores * d_k ** -0.5, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(num_trials, dim, generator=g)
    q = torch.randn(num_trials, dim, generator=g)
    wei = (q.unsqueeze(1) @ k.unsqueeze(-1)).flatten()
    return wei.var().item(), (wei * dim ** -0.5).var().item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        head_size = self.W_key.shape[1]
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        wei = F.softmax(q @ k.transpose(-2, -1) * head_size ** -0.5, dim=-1)
        return wei @ v


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.head_size = d_out

    def forward(self, x):
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * self.head_size ** -0.5
        wei = F.softmax(wei, dim=-1)
        v = self.value(x)
        return wei @ v


# %% step: masking


def causal_mask(context_length):
    T = context_length
    return torch.tril(torch.ones(T, T)) == 0


def mask_and_renormalize(attn_weights):
    T = attn_weights.size(-1)
    tril = torch.tril(torch.ones(T, T))
    wei = attn_weights * tril
    wei = wei / torch.sum(wei, -1, keepdim=True)
    return wei


def causal_attention_weights(scores, d_k):
    T = scores.size(-1)
    tril = torch.tril(torch.ones(T, T))
    wei = scores * d_k ** -0.5
    wei = wei.masked_fill(tril == 0, float('-inf'))
    wei = F.softmax(wei, dim=-1)
    return wei


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    drop = nn.Dropout(p)
    drop.train(training)
    return drop(attn_weights)


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.register_buffer('tril', torch.tril(torch.ones(context_length, context_length)))
        self.dropout = nn.Dropout(dropout)
        self.head_size = d_out

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * self.head_size ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf'))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        v = self.value(x)
        out = wei @ v
        return out


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)
        )

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_head = num_heads
        self.head_size = d_out // num_heads
        self.query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('tril', torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        B, T, _ = x.shape
        nh, hs = self.n_head, self.head_size
        q = self.query(x).view(B, T, nh, hs).transpose(1, 2)
        k = self.key(x).view(B, T, nh, hs).transpose(1, 2)
        v = self.value(x).view(B, T, nh, hs).transpose(1, 2)
        wei = q @ k.transpose(-2, -1) * hs ** -0.5          # (B, nh, T, T)
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf'))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        out = wei @ v                                       # (B, nh, T, hs)
        out = out.transpose(1, 2).contiguous().view(B, T, nh * hs)
        return self.proj(out)
