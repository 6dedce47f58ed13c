# 어텐션 과제 (주석은 한국어로 작성)
import math

import torch
from torch import nn


# %% step: projection

def init_qkv_weights(d_in, d_out):
    # 쿼리 -> 키 -> 값 순서로 뽑는다 (시드 순서 중요)
    w_q = torch.rand(d_in, d_out)
    w_k = torch.rand(d_in, d_out)
    w_v = torch.rand(d_in, d_out)
    return w_q, w_k, w_v


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


# %% step: scaling

def attention_scores(queries, keys):
    # 모든 쿼리와 모든 키의 내적
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    # sqrt(d_k)로 나눈 뒤 마지막 축으로 softmax
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    naejeok = []  # 내적 값들
    for _ in range(num_trials):
        q = torch.randn(dim, generator=gen)
        k = torch.randn(dim, generator=gen)
        naejeok.append((q * k).sum().item())
    t = torch.tensor(naejeok, dtype=torch.float64)
    return t.var(unbiased=False).item(), (t / math.sqrt(dim)).var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        gajungchi = scaled_attention_weights(attention_scores(q, k), k.shape[-1])  # 가중치
        return context_vectors(gajungchi, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        gajungchi = scaled_attention_weights(attention_scores(q, k), k.shape[-1])
        return context_vectors(gajungchi, v)


# %% step: masking

def causal_mask(context_length):
    # 대각선 위쪽(미래)이 True
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    arae = torch.tril(torch.ones(n, n, dtype=attn_weights.dtype))  # 아래 삼각형
    w = attn_weights * arae
    return w / w.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    gaerim = causal_mask(scores.shape[-1])  # 가림
    return torch.softmax(scores.masked_fill(gaerim, -torch.inf) / math.sqrt(d_k), dim=-1)


# %% step: dropout

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights  # 평가 모드에서는 그대로
    yuji = (torch.rand_like(attn_weights) > p).to(attn_weights.dtype)  # 유지
    return attn_weights * yuji / (1.0 - p)


# %% step: causal_attention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("gaerim", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        jeomsu = q @ k.transpose(1, 2)  # 점수
        jeomsu = jeomsu.masked_fill(self.gaerim[:n, :n], -torch.inf)
        gajungchi = self.dropout(torch.softmax(jeomsu / math.sqrt(k.shape[-1]), dim=-1))
        return gajungchi @ v


# %% step: mha_wrapper

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.meoridul = nn.ModuleList(  # 머리들
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([meori(x) for meori in self.meoridul], dim=-1)


# %% step: multihead_attention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("gaerim", causal_mask(context_length))

    def forward(self, x):
        b, n, d = x.shape[0], x.shape[1], self.num_heads * self.head_dim
        # 헤드 축을 앞으로
        q = self.W_query(x).reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        jeomsu = (q @ k.transpose(-2, -1)).masked_fill(self.gaerim[:n, :n], -torch.inf)
        gajungchi = self.dropout(torch.softmax(jeomsu / math.sqrt(self.head_dim), dim=-1))
        # 다시 합치기: 헤드 축을 뒤로 보낸 뒤 평탄화
        munmaek = (gajungchi @ v).transpose(1, 2).reshape(b, n, d)  # 문맥
        return self.out_proj(munmaek)
