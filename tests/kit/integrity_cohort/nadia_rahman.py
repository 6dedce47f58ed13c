"""Attention mechanisms -- Nadia Rahman.

I kept the exercise's function names and wrote the bodies myself, checking
shapes against the Annotated Transformer where I got stuck.
"""

import math
import torch
import torch.nn as nn


#################### Step 1: projections ####################

def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)   # query first
    Wk = torch.rand(d_in, d_out)   # then key
    Wv = torch.rand(d_in, d_out)   # then value
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


#################### Step 2: scaled dot product ####################

def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    scores = scores / math.sqrt(d_k)
    scores = scores - scores.max(dim=-1, keepdim=True).values  # numerically stable
    e = scores.exp()
    return e / e.sum(dim=-1, keepdim=True)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    torch_gen = torch.Generator().manual_seed(seed)
    samples = []
    for trial in range(num_trials):
        q = torch.randn(dim, generator=torch_gen)
        k = torch.randn(dim, generator=torch_gen)
        samples.append(float(torch.dot(q, k)))
    samples = torch.tensor(samples)
    return samples.var().item(), (samples / math.sqrt(dim)).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        Q = torch.matmul(x, self.W_query)
        K = torch.matmul(x, self.W_key)
        V = torch.matmul(x, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(Q, K), K.shape[1]), V)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(Q, K), K.shape[1]), V)


#################### Step 3: causal mask ####################

def causal_mask(context_length):
    m = torch.zeros(context_length, context_length, dtype=torch.bool)
    for i in range(context_length):
        m[i, i + 1:] = True
    return m


def mask_and_renormalize(attn_weights):
    hide = causal_mask(attn_weights.shape[-1]).to(attn_weights.device)
    w = attn_weights.clone()
    w[..., hide] = 0.0
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    hide = causal_mask(scores.shape[-1]).to(scores.device)
    s = scores.masked_fill(hide, -math.inf)
    return torch.softmax(s / math.sqrt(d_k), dim=-1)


#################### Step 4: dropout ####################

def attention_dropout(attn_weights, p, training=True):
    if training == False:
        return attn_weights
    r = torch.rand_like(attn_weights)
    return attn_weights * (r > p)


#################### Step 5: causal attention class ####################

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
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        S = attention_scores(Q, K).masked_fill(self.mask[:n, :n], -math.inf)
        A = torch.softmax(S / math.sqrt(K.shape[-1]), dim=-1)
        return self.dropout(A) @ V


#################### Step 6: wrapper ####################

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for i in range(num_heads):
            head = CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            self.heads.append(head)

    def forward(self, x):
        results = []
        for head in self.heads:
            results.append(head(x))
        return torch.cat(results, dim=-1)


#################### Step 7: multi-head attention ####################

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        Q = self.W_query(x).reshape(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        K = self.W_key(x).reshape(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        V = self.W_value(x).reshape(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        S = attention_scores(Q, K).masked_fill(self.mask[:n, :n], -math.inf)
        A = self.dropout(torch.softmax(S / math.sqrt(self.head_dim), dim=-1))
        out = (A @ V).permute(0, 2, 1, 3).reshape(b, n, self.d_out)
        return self.out_proj(out)
