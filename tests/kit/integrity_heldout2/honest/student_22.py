# Mecanismos de atención - ejercicio
# Autor: (alumno)   -- comentarios en español

import math

import torch
import torch.nn as nn


def init_qkv_weights(d_in, d_out):
    # tres matrices aleatorias (uniforme en [0, 1)), en orden: consulta, clave, valor
    W_consulta = torch.rand(d_in, d_out)
    W_clave = torch.rand(d_in, d_out)
    W_valor = torch.rand(d_in, d_out)
    return W_consulta, W_clave, W_valor


def project(x, W_query, W_key, W_value):
    consultas = x.matmul(W_query)
    claves = x.matmul(W_key)
    valores = x.matmul(W_value)
    return consultas, claves, valores


def attention_scores(queries, keys):
    # producto punto de cada consulta con cada clave
    return queries.matmul(keys.permute(*range(keys.dim() - 2), -1, -2))


def scaled_attention_weights(scores, d_k):
    escala = d_k ** 0.5
    return torch.softmax(scores / escala, dim=-1)


def context_vectors(attn_weights, values):
    # suma ponderada de los vectores de valor
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    generador = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=generador, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=generador, dtype=torch.float64)
    productos = (q * k).sum(dim=-1)
    escalados = productos / math.sqrt(dim)
    # varianza poblacional (sin corrección de Bessel)
    var_antes = productos.var(unbiased=False).item()
    var_despues = escalados.var(unbiased=False).item()
    return var_antes, var_despues


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        consultas = x.matmul(self.W_query)
        claves = x.matmul(self.W_key)
        valores = x.matmul(self.W_value)
        puntajes = consultas.matmul(claves.permute(1, 0))
        pesos = torch.softmax(puntajes / claves.shape[-1] ** 0.5, dim=-1)
        return pesos.matmul(valores)


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
        puntajes = consultas.matmul(claves.permute(1, 0))
        pesos = torch.softmax(puntajes / claves.shape[-1] ** 0.5, dim=-1)
        return pesos.matmul(valores)


def causal_mask(context_length):
    # True encima de la diagonal: el futuro queda oculto
    return ~torch.ones(context_length, context_length, dtype=torch.bool).tril()


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


def attention_dropout(attn_weights, p, training=True):
    # en evaluación no se toca nada
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    conservar = (torch.rand_like(attn_weights) >= p).to(attn_weights.dtype)
    return attn_weights * conservar * (1.0 / (1.0 - p))


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
        puntajes = consultas.matmul(claves.permute(0, 2, 1))
        # recortar la máscara al largo real de la secuencia
        puntajes = puntajes.masked_fill(self.mask[:n, :n], float("-inf"))
        pesos = torch.softmax(puntajes / claves.shape[-1] ** 0.5, dim=-1)
        pesos = self.dropout(pesos)
        return pesos.matmul(valores)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        cabezas = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        self.heads = nn.ModuleList(cabezas)

    def forward(self, x):
        return torch.cat([cabeza(x) for cabeza in self.heads], dim=-1)


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
        # (lote, n, d_out) -> (lote, n, cabezas, head_dim) -> (lote, cabezas, n, head_dim)
        forma = (lote, n, self.num_heads, self.head_dim)
        consultas = self.W_query(x).reshape(forma).permute(0, 2, 1, 3)
        claves = self.W_key(x).reshape(forma).permute(0, 2, 1, 3)
        valores = self.W_value(x).reshape(forma).permute(0, 2, 1, 3)

        puntajes = consultas.matmul(claves.permute(0, 1, 3, 2))
        puntajes = puntajes.masked_fill(self.mask[:n, :n], float("-inf"))
        pesos = torch.softmax(puntajes / self.head_dim ** 0.5, dim=-1)
        pesos = self.dropout(pesos)

        # volver a juntar las cabezas: (lote, cabezas, n, hd) -> (lote, n, cabezas, hd) -> (lote, n, d_out)
        contexto = pesos.matmul(valores).permute(0, 2, 1, 3).reshape(lote, n, self.d_out)
        return self.out_proj(contexto)
