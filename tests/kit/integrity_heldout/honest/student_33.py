import math
import torch
import torch.nn as nn

BIG_NEGATIVE = -1e9

# %% step: projection

def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)
    Wk = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wq, Wk, Wv

def project(x, W_query, W_key, W_value):
    Q = x @ W_query
    K = x @ W_key
    V = x @ W_value
    return Q, K, V

# %% step: scaling

def attention_scores(queries, keys):
    return queries @ keys.swapaxes(-1, -2)

def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)

def context_vectors(attn_weights, values):
    return attn_weights @ values

def dot_product_variance(dim, num_trials=1000, seed=0):
    torch.manual_seed(seed)
    Q = torch.randn(num_trials, dim)
    K = torch.randn(num_trials, dim)
    prods = (Q * K).sum(-1)
    return prods.var().item(), (prods / math.sqrt(dim)).var().item()

class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        Q, K, V = project(x, self.W_query, self.W_key, self.W_value)
        A = scaled_attention_weights(attention_scores(Q, K), K.shape[-1])
        return A @ V

class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        A = scaled_attention_weights(attention_scores(Q, K), K.shape[-1])
        return A @ V

# %% step: masking

def causal_mask(context_length):
    return torch.triu(torch.full((context_length, context_length), True), diagonal=1)

def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    A = attn_weights.masked_fill(causal_mask(n), 0)
    return A / A.sum(-1, keepdim=True)

def causal_attention_weights(scores, d_k):
    # the exercise says -inf; -1e9 gives the same softmax in float32
    n = scores.shape[-1]
    S = scores.masked_fill(causal_mask(n), BIG_NEGATIVE)
    return torch.softmax(S / math.sqrt(d_k), dim=-1)

# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    keep = torch.bernoulli(torch.full_like(attn_weights, 1 - p))
    return attn_weights * keep * (1.0 / (1 - p))

# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', causal_mask(context_length))

    def forward(self, x):
        T = x.shape[1]
        Q, K, V = self.W_query(x), self.W_key(x), self.W_value(x)
        S = attention_scores(Q, K).masked_fill(self.mask[:T, :T], BIG_NEGATIVE)
        A = self.dropout(torch.softmax(S / math.sqrt(K.shape[-1]), dim=-1))
        return A @ V

# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([hd(x) for hd in self.heads], dim=-1)

# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.H = num_heads
        self.dh = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', causal_mask(context_length))

    def forward(self, x):
        B, T, _ = x.shape
        Q = self.W_query(x).view(B, T, self.H, self.dh).transpose(1, 2)
        K = self.W_key(x).view(B, T, self.H, self.dh).transpose(1, 2)
        V = self.W_value(x).view(B, T, self.H, self.dh).transpose(1, 2)
        S = (Q @ K.transpose(-1, -2)).masked_fill(self.mask[:T, :T], BIG_NEGATIVE)
        A = self.dropout(torch.softmax(S / math.sqrt(self.dh), dim=-1))
        Z = (A @ V).transpose(1, 2).contiguous().view(B, T, self.H * self.dh)
        return self.out_proj(Z)
