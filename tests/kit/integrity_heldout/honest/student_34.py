# -*- coding: utf-8 -*-
# Tarea: mecanismos de atención paso a paso.
# Autor: estudiante del curso (comentarios en español, perdón)

import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    # Primero la consulta, luego la clave y al final el valor (el orden importa por la semilla)
    peso_consulta = torch.rand(d_in, d_out)
    peso_clave = torch.rand(d_in, d_out)
    peso_valor = torch.rand(d_in, d_out)
    return peso_consulta, peso_clave, peso_valor


def project(x, W_query, W_key, W_value):
    consultas = x @ W_query
    claves = x @ W_key
    valores = x @ W_value
    return consultas, claves, valores


# %% step: scaling


def attention_scores(queries, keys):
    # producto punto de cada consulta con cada clave
    return torch.matmul(queries, torch.transpose(keys, -2, -1))


def scaled_attention_weights(scores, d_k):
    # dividimos por la raíz de d_k y aplicamos softmax en la última dimensión
    puntajes_escalados = scores / math.sqrt(d_k)
    return torch.softmax(puntajes_escalados, dim=-1)


def context_vectors(attn_weights, values):
    # suma ponderada de los valores
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    generador = torch.Generator().manual_seed(seed)
    productos = torch.zeros(num_trials)
    for ensayo in range(num_trials):
        consulta = torch.randn(dim, generator=generador)
        clave = torch.randn(dim, generator=generador)
        productos[ensayo] = torch.dot(consulta, clave)
    varianza_antes = productos.var().item()
    varianza_despues = (productos / math.sqrt(dim)).var().item()
    return varianza_antes, varianza_despues


class SelfAttention_v1(nn.Module):
    """Autoatención con matrices de pesos crudas."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        consultas, claves, valores = project(x, self.W_query, self.W_key, self.W_value)
        puntajes = attention_scores(consultas, claves)
        pesos = scaled_attention_weights(puntajes, claves.shape[-1])
        return context_vectors(pesos, valores)


class SelfAttention_v2(nn.Module):
    """Igual que v1 pero con capas lineales."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        consultas = self.W_query(x)
        claves = self.W_key(x)
        valores = self.W_value(x)
        pesos = scaled_attention_weights(attention_scores(consultas, claves), claves.shape[-1])
        return context_vectors(pesos, valores)


# %% step: masking


def causal_mask(context_length):
    # True por encima de la diagonal: el futuro está oculto
    unos = torch.ones(context_length, context_length, dtype=torch.bool)
    return torch.triu(unos, diagonal=1)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    triangular_inferior = torch.tril(torch.ones(n, n, dtype=attn_weights.dtype))
    enmascarado = attn_weights * triangular_inferior
    suma_filas = enmascarado.sum(dim=-1, keepdim=True)
    return enmascarado / suma_filas


def causal_attention_weights(scores, d_k):
    mascara = causal_mask(scores.shape[-1])
    puntajes = scores.masked_fill(mascara, -torch.inf)
    return scaled_attention_weights(puntajes, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights  # en evaluación no se toca nada
    capa = nn.Dropout(p)
    return capa(attn_weights)


# %% step: causal_attention


class CausalAttention(nn.Module):
    """Atención causal de una sola cabeza."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mascara", causal_mask(context_length))

    def forward(self, x):
        lote, num_tokens, _ = x.shape
        consultas = self.W_query(x)
        claves = self.W_key(x)
        valores = self.W_value(x)

        puntajes = consultas @ claves.transpose(1, 2)
        # recortamos la máscara por si la secuencia es más corta que context_length
        puntajes.masked_fill_(self.mascara[:num_tokens, :num_tokens], -torch.inf)
        pesos = torch.softmax(puntajes / math.sqrt(self.d_out), dim=-1)
        pesos = self.dropout(pesos)
        return pesos @ valores


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """Varias cabezas independientes, concatenadas."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.cabezas = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        salidas = [cabeza(x) for cabeza in self.cabezas]
        return torch.cat(salidas, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Atención multicabeza eficiente: una proyección por rol, luego se divide en cabezas."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out debe ser divisible entre num_heads"
        self.d_out = d_out
        self.num_cabezas = num_heads
        self.dim_cabeza = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.proyeccion_salida = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mascara", causal_mask(context_length))

    def _dividir(self, t, lote, num_tokens):
        # (lote, tokens, d_out) -> (lote, cabezas, tokens, dim_cabeza)
        return t.view(lote, num_tokens, self.num_cabezas, self.dim_cabeza).transpose(1, 2)

    def forward(self, x):
        lote, num_tokens, _ = x.shape
        consultas = self._dividir(self.W_query(x), lote, num_tokens)
        claves = self._dividir(self.W_key(x), lote, num_tokens)
        valores = self._dividir(self.W_value(x), lote, num_tokens)

        puntajes = consultas @ claves.transpose(2, 3)
        puntajes.masked_fill_(self.mascara[:num_tokens, :num_tokens], -torch.inf)
        pesos = torch.softmax(puntajes / math.sqrt(self.dim_cabeza), dim=-1)
        pesos = self.dropout(pesos)

        contexto = (pesos @ valores).transpose(1, 2).contiguous()
        contexto = contexto.view(lote, num_tokens, self.d_out)
        return self.proyeccion_salida(contexto)
