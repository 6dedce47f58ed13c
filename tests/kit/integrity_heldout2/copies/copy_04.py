# Esercizio sull'attenzione (commenti in italiano)
import math
from typing import List, Tuple

import torch
from torch import Tensor, nn


# --- passo 3: maschera causale ---

def causal_mask(context_length: int) -> Tensor:
    # vero sopra la diagonale = posizioni future
    cols = torch.arange(context_length).unsqueeze(0)
    rows = torch.arange(context_length).unsqueeze(1)
    return cols > rows


def causal_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    fut = causal_mask(scores.shape[-1]).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(fut, float("-inf")), d_k)


def mask_and_renormalize(attn_weights: Tensor) -> Tensor:
    fut = causal_mask(attn_weights.shape[-1]).to(attn_weights.device)
    w = attn_weights.masked_fill(fut, 0.0)
    tot = w.sum(dim=-1, keepdim=True)
    return w / tot


# --- passo 1: proiezione ---

def init_qkv_weights(d_in: int, d_out: int) -> Tuple[Tensor, Tensor, Tensor]:
    wq = torch.rand(d_in, d_out)
    wk = torch.rand(d_in, d_out)
    wv = torch.rand(d_in, d_out)
    return wq, wk, wv


def project(x: Tensor, W_query: Tensor, W_key: Tensor, W_value: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    vv = torch.matmul(x, W_value)
    kk = torch.matmul(x, W_key)
    qq = torch.matmul(x, W_query)
    return qq, kk, vv


# --- passo 2: scala ---

def scaled_attention_weights(scores: Tensor, d_k: int) -> Tensor:
    return torch.softmax(scores * d_k ** -0.5, dim=-1)


def attention_scores(queries: Tensor, keys: Tensor) -> Tensor:
    return torch.matmul(queries, keys.transpose(-1, -2))


def context_vectors(attn_weights: Tensor, values: Tensor) -> Tensor:
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim: int, num_trials: int = 1000, seed: int = 0) -> Tuple[float, float]:
    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    K = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    prods: List[float] = [float(torch.dot(a, b)) for a, b in zip(Q, K)]
    t = torch.tensor(prods, dtype=torch.float64)
    return t.var(unbiased=False).item(), (t * dim ** -0.5).var(unbiased=False).item()


# --- passo 4: dropout ---

def attention_dropout(attn_weights: Tensor, p: float, training: bool = True) -> Tensor:
    if not training:
        return attn_weights
    if p >= 1.0:
        return torch.zeros_like(attn_weights)
    alive = torch.rand_like(attn_weights) >= p
    return attn_weights * alive * (1.0 / (1.0 - p))


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: Tensor) -> Tensor:
        vv = self.W_value(x)
        kk = self.W_key(x)
        qq = self.W_query(x)
        w = scaled_attention_weights(attention_scores(qq, kk), kk.shape[-1])
        return context_vectors(w, vv)


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: Tensor) -> Tensor:
        qq, kk, vv = project(x, self.W_query, self.W_key, self.W_value)
        w = scaled_attention_weights(attention_scores(qq, kk), kk.shape[-1])
        return context_vectors(w, vv)


# --- passi 5-7: moduli ---

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,
                 qkv_bias: bool = False) -> None:
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) non divisibile per num_heads ({num_heads})")
        self.nh = num_heads
        self.hd = d_out // num_heads
        self.dim = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.register_buffer("mask", causal_mask(context_length))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        T = x.shape[1]
        fut = self.mask[:T, :T]
        V = self.W_value(x)
        K = self.W_key(x)
        Q = self.W_query(x)

        outs = []
        for h in range(self.nh):
            lo, hi = h * self.hd, (h + 1) * self.hd
            q_h, k_h, v_h = Q[:, :, lo:hi], K[:, :, lo:hi], V[:, :, lo:hi]
            s = torch.matmul(q_h, k_h.permute(0, 2, 1)).masked_fill(fut, float("-inf"))
            a = self.dropout(scaled_attention_weights(s, self.hd))
            outs.append(torch.matmul(a, v_h))  # una testa alla volta
        return self.out_proj(torch.cat(outs, dim=-1))


class CausalAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False) -> None:
        super().__init__()
        self.dim = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.register_buffer("mask", causal_mask(context_length))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        T = x.shape[1]
        V = self.W_value(x)
        K = self.W_key(x)
        Q = self.W_query(x)
        s = torch.matmul(Q, K.permute(0, 2, 1)).masked_fill(self.mask[:T, :T], float("-inf"))
        a = self.dropout(scaled_attention_weights(s, K.shape[-1]))
        return torch.matmul(a, V)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int,
                 qkv_bias: bool = False) -> None:
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([h(x) for h in self.heads], dim=-1)
