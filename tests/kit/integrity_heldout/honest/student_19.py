# -*- coding: utf-8 -*-
"""Tarea de atención -- versión de Lucía."""
import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    Wq = torch.rand(d_in, d_out)  # consulta
    Wk = torch.rand(d_in, d_out)  # clave
    Wv = torch.rand(d_in, d_out)  # valor
    return Wq, Wk, Wv


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    return queries @ keys.mT


def scaled_attention_weights(scores, d_k):
    return (scores / math.sqrt(d_k)).softmax(dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    prod = torch.einsum("nd,nd->n", q, k)
    return float(prod.var()), float((prod / math.sqrt(dim)).var())


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return scaled_attention_weights(q @ k.mT, k.shape[-1]) @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return scaled_attention_weights(q @ k.mT, k.shape[-1]) @ v


def causal_mask(context_length):
    # futuro = encima de la diagonal
    return torch.ones(context_length, context_length).triu(diagonal=1).bool()


def mask_and_renormalize(attn_weights):
    w = attn_weights.masked_fill(causal_mask(attn_weights.shape[-1]), 0)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    return scaled_attention_weights(scores.masked_fill(causal_mask(scores.shape[-1]), -1e9), d_k)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    return nn.functional.dropout(attn_weights, p)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.abandono = nn.Dropout(dropout)
        self.register_buffer("futuro", causal_mask(context_length))

    def forward(self, x):
        largo = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        puntos = q @ k.mT
        puntos.masked_fill(self.futuro[:largo, :largo], -1e9)  # tapar el futuro
        pesos = self.abandono(scaled_attention_weights(puntos, k.shape[-1]))
        return pesos @ v


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.cabezas = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([c(x) for c in self.cabezas], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.h = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.salida = nn.Linear(d_out, d_out)
        self.abandono = nn.Dropout(dropout)
        self.register_buffer("futuro", causal_mask(context_length))

    def forward(self, x):
        b, largo, _ = x.shape
        q = self.W_query(x).unflatten(-1, (self.h, -1)).transpose(1, 2)
        k = self.W_key(x).unflatten(-1, (self.h, -1)).transpose(1, 2)
        v = self.W_value(x).unflatten(-1, (self.h, -1)).transpose(1, 2)
        puntos = q @ k.mT
        puntos.masked_fill(self.futuro[:largo, :largo], -1e9)
        pesos = self.abandono(scaled_attention_weights(puntos, k.shape[-1]))
        return self.salida((pesos @ v).transpose(1, 2).flatten(2))
