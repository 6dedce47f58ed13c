#!/usr/bin/env python
# coding: utf-8

# # Attention exercise
# (exported from my notebook, then cleaned up a bit)

# In[1]:


import math
import torch
from torch import nn


# ## Step 1: projection

# In[2]:


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


# In[3]:


def project(x, W_query, W_key, W_value):
    queries = x @ W_query
    keys = x @ W_key
    values = x @ W_value
    return queries, keys, values


# ## Step 2: scaling

# In[4]:


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)


# In[5]:


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


# In[6]:


def context_vectors(attn_weights, values):
    return attn_weights @ values


# In[7]:


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    dots = []
    for _ in range(num_trials):
        q = torch.randn(dim, generator=gen)
        k = torch.randn(dim, generator=gen)
        dots.append((q @ k).item())
    dots = torch.tensor(dots)
    return dots.var().item(), (dots / math.sqrt(dim)).var().item()


# In[8]:


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries = x @ self.W_query
        keys = x @ self.W_key
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / math.sqrt(keys.shape[-1]), dim=-1)
        return attn_weights @ values


# In[9]:


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / math.sqrt(keys.shape[-1]), dim=-1)
        return attn_weights @ values


# ## Step 3: masking

# In[10]:


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length), diagonal=1) == 1


# In[11]:


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    simple = torch.tril(torch.ones(n, n))
    masked = attn_weights * simple
    return masked / masked.sum(dim=-1, keepdim=True)


# In[12]:


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    masked = scores.masked_fill(causal_mask(n), -torch.inf)
    return torch.softmax(masked / math.sqrt(d_k), dim=-1)


# ## Step 4: dropout

# In[13]:


def attention_dropout(attn_weights, p, training=True):
    drop = torch.nn.Dropout(p)
    if training:
        drop.train()
    else:
        drop.eval()
    return drop(attn_weights)


# ## Step 5: causal attention

# In[14]:


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask[:n, :n], -torch.inf)
        attn_weights = torch.softmax(attn_scores / math.sqrt(keys.shape[-1]), dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


# ## Step 6: wrapper

# In[15]:


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# ## Step 7: multi-head attention

# In[16]:


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        queries = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores = attn_scores.masked_fill(self.mask[:n, :n], -torch.inf)
        attn_weights = torch.softmax(attn_scores / math.sqrt(self.head_dim), dim=-1)
        attn_weights = self.dropout(attn_weights)
        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(context)


# In[17]:


if __name__ == "__main__":
    torch.manual_seed(123)
    batch = torch.rand(2, 6, 3)
    mha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    print(mha(batch).shape)
    print(dot_product_variance(5), dot_product_variance(20))
