#!/usr/bin/env python
# coding: utf-8

# # Coding attention mechanisms (exported from my notebook)

# In[1]:


import math
import torch
import torch.nn as nn


# In[2]:


inputs = torch.tensor(
  [[0.43, 0.15, 0.89], # Your     (x^1)
   [0.55, 0.87, 0.66], # journey  (x^2)
   [0.57, 0.85, 0.64], # starts   (x^3)
   [0.22, 0.58, 0.33], # with     (x^4)
   [0.77, 0.25, 0.10], # one      (x^5)
   [0.05, 0.80, 0.55]] # step     (x^6)
)


# In[3]:


def init_qkv_weights(d_in, d_out):
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return (W_query, W_key, W_value)

def project(x, W_query, W_key, W_value):
    return (torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value))


# In[4]:


def attention_scores(queries, keys):
    return torch.matmul(queries, torch.transpose(keys, -2, -1))

def scaled_attention_weights(scores, d_k):
    scaled = scores / (d_k ** 0.5)
    return torch.softmax(scaled, dim=-1)

def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


# In[5]:


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    before = []
    after = []
    for _ in range(num_trials):
        q = torch.randn(dim, generator=g)
        k = torch.randn(dim, generator=g)
        d = torch.dot(q, k).item()
        before.append(d)
        after.append(d / math.sqrt(dim))
    return torch.tensor(before).var().item(), torch.tensor(after).var().item()


# In[6]:


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key   = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = torch.matmul(x, self.W_key)
        queries = torch.matmul(x, self.W_query)
        values = torch.matmul(x, self.W_value)
        attn_scores = torch.matmul(queries, keys.T)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        return torch.matmul(attn_weights, values)

class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = torch.matmul(queries, keys.T)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        return torch.matmul(attn_weights, values)


# In[7]:


torch.manual_seed(789)
sa_v2 = SelfAttention_v2(3, 2)
print(sa_v2(inputs))


# In[8]:


def causal_mask(context_length):
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)

def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    mask_simple = torch.tril(torch.ones(n, n, device=attn_weights.device))
    masked_simple = attn_weights * mask_simple
    return masked_simple / masked_simple.sum(dim=-1, keepdim=True)

def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    masked = scores.masked_fill(causal_mask(n).to(scores.device), -torch.inf)
    return torch.softmax(masked / d_k**0.5, dim=-1)


# In[9]:


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    layer = nn.Dropout(p)
    return layer(attn_weights)


# In[10]:


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = torch.matmul(queries, keys.transpose(1, 2))
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return torch.matmul(attn_weights, values)


# In[11]:


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for i in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# In[12]:


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = torch.matmul(queries, keys.transpose(2, 3))
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1))
        context_vec = torch.matmul(attn_weights, values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


# In[13]:


torch.manual_seed(123)
batch = torch.stack((inputs, inputs), dim=0)
mha = MultiHeadAttention(3, 2, batch.shape[1], 0.0, num_heads=2)
print(mha(batch))
