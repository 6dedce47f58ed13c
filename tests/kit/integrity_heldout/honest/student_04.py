# attention.py -- nanoGPT flavoured

import math

import torch
from torch import nn
from torch.nn import functional as F

# %% step: projection


def init_qkv_weights(d_in, d_out):
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x, W_query, W_key, W_value):
    q = x @ W_query
    k = x @ W_key
    v = x @ W_value
    return q, k, v


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    wei = scores * d_k**-0.5
    return F.softmax(wei, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g)
    k = torch.randn(num_trials, dim, generator=g)
    wei = (q * k).sum(-1)
    return wei.var().item(), (wei * dim**-0.5).var().item()


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        T, C = x.shape
        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
        wei = q @ k.transpose(-2, -1) * k.shape[-1]**-0.5  # (T, T)
        wei = F.softmax(wei, dim=-1)
        out = wei @ v
        return out


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q = self.query(x)
        k = self.key(x)
        v = self.value(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1]**-0.5
        wei = F.softmax(wei, dim=-1)
        return wei @ v


# %% step: masking


def causal_mask(context_length):
    tril = torch.tril(torch.ones(context_length, context_length))
    return tril == 0


def mask_and_renormalize(attn_weights):
    T = attn_weights.shape[-1]
    tril = torch.tril(torch.ones(T, T))
    wei = attn_weights.masked_fill(tril == 0, 0.0)
    return wei / wei.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    T = scores.shape[-1]
    tril = torch.tril(torch.ones(T, T))
    wei = scores.masked_fill(tril == 0, float('-inf'))
    return F.softmax(wei * d_k**-0.5, dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p, training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    """ one head of self-attention """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.register_buffer('tril', torch.tril(torch.ones(context_length, context_length)))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)    # (B,T,hs)
        q = self.query(x)  # (B,T,hs)
        # compute attention scores ("affinities")
        wei = q @ k.transpose(-2, -1) * k.shape[-1]**-0.5  # (B, T, hs) @ (B, hs, T) -> (B, T, T)
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf'))  # (B, T, T)
        wei = F.softmax(wei, dim=-1)  # (B, T, T)
        wei = self.dropout(wei)
        # perform the weighted aggregation of the values
        v = self.value(x)  # (B,T,hs)
        out = wei @ v  # (B, T, T) @ (B, T, hs) -> (B, T, hs)
        return out


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """ multiple heads of self-attention in parallel """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        return out


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.q_proj = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.k_proj = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.v_proj = nn.Linear(d_in, d_out, bias=qkv_bias)
        # output projection
        self.c_proj = nn.Linear(d_out, d_out)
        # regularization
        self.attn_dropout = nn.Dropout(dropout)
        self.n_head = num_heads
        self.n_embd = d_out
        # causal mask to ensure that attention is only applied to the left in the input sequence
        self.register_buffer("bias", torch.tril(torch.ones(context_length, context_length))
                             .view(1, 1, context_length, context_length))

    def forward(self, x):
        B, T, _ = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        C = self.n_embd

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        q = self.q_proj(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = self.k_proj(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = self.v_proj(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)

        # manual implementation of attention
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side

        # output projection
        y = self.c_proj(y)
        return y
