"""Tarea: atención."""
import math

import torch
import torch.nn as nn


def causal_mask(context_length):
    return ~torch.ones(context_length, context_length, dtype=torch.bool).tril()

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    conservar = (torch.rand_like(attn_weights) >= p).to(attn_weights.dtype)
    return attn_weights * conservar * (1.0 / (1.0 - p))

def init_qkv_weights(d_in, d_out):
    W_consulta = torch.rand(d_in, d_out)
    W_clave = torch.rand(d_in, d_out)
    W_valor = torch.rand(d_in, d_out)
    return W_consulta, W_clave, W_valor

def project(x, W_query, W_key, W_value):
    consultas = x @ W_query
    claves = x @ W_key
    valores = x @ W_value
    return consultas, claves, valores

def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)

def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)

def context_vectors(attn_weights, values):
    return attn_weights @ values

def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    visibles = torch.ones(n, n, device=attn_weights.device).tril()
    enmascarado = attn_weights * visibles
    return enmascarado / enmascarado.sum(dim=-1, keepdim=True)

def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    ocultos = causal_mask(n).to(scores.device)
    puntajes = scores.masked_fill(ocultos, float("-inf"))
    return torch.softmax(puntajes / d_k ** 0.5, dim=-1)

def dot_product_variance(dim, num_trials=1000, seed=0):
    generador = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=generador, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=generador, dtype=torch.float64)
    productos = (q * k).sum(dim=-1)
    escalados = productos / math.sqrt(dim)
    var_antes = productos.var(unbiased=False).item()
    var_despues = escalados.var(unbiased=False).item()
    return var_antes, var_despues

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out debe ser divisible por num_heads"
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
        lote, n, _ = x.shape
        forma = (lote, n, self.num_heads, self.head_dim)
        consultas = self.W_query(x).view(forma).transpose(1, 2)
        claves = self.W_key(x).view(forma).transpose(1, 2)
        valores = self.W_value(x).view(forma).transpose(1, 2)

        puntajes = consultas @ claves.transpose(2, 3)
        puntajes = puntajes.masked_fill(self.mask[:n, :n], float("-inf"))
        pesos = torch.softmax(puntajes / self.head_dim ** 0.5, dim=-1)
        pesos = self.dropout(pesos)
        contexto = (pesos @ valores).transpose(1, 2).contiguous().view(lote, n, self.d_out)
        return self.out_proj(contexto)

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        lote, n, _ = x.shape
        consultas = self.W_query(x)
        claves = self.W_key(x)
        valores = self.W_value(x)
        puntajes = consultas @ claves.transpose(1, 2)
        puntajes = puntajes.masked_fill(self.mask[:n, :n], float("-inf"))
        pesos = torch.softmax(puntajes / claves.shape[-1] ** 0.5, dim=-1)
        pesos = self.dropout(pesos)
        return pesos @ valores

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        cabezas = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        self.heads = nn.ModuleList(cabezas)

    def forward(self, x):
        return torch.cat([cabeza(x) for cabeza in self.heads], dim=-1)

class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        consultas = self.W_query(x)
        claves = self.W_key(x)
        valores = self.W_value(x)
        puntajes = consultas @ claves.transpose(0, 1)
        pesos = torch.softmax(puntajes / claves.shape[-1] ** 0.5, dim=-1)
        return pesos @ valores

class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        consultas = x @ self.W_query
        claves = x @ self.W_key
        valores = x @ self.W_value
        puntajes = consultas @ claves.transpose(0, 1)
        pesos = torch.softmax(puntajes / claves.shape[-1] ** 0.5, dim=-1)
        return pesos @ valores
