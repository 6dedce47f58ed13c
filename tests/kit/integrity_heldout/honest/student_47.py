"""Esercizio: meccanismi di attenzione. Commenti in italiano."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# %% step: projection


def init_qkv_weights(d_in, d_out):
    # interrogazione, chiave, valore: in quest'ordine
    Wi = torch.rand(d_in, d_out)
    Wc = torch.rand(d_in, d_out)
    Wv = torch.rand(d_in, d_out)
    return Wi, Wc, Wv


def project(x, W_query, W_key, W_value):
    interrogazioni = x @ W_query
    chiavi = x @ W_key
    valori = x @ W_value
    return interrogazioni, chiavi, valori


# %% step: scaling


def attention_scores(queries, keys):
    return queries @ keys.transpose(-1, -2)


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores / d_k ** 0.5, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    prodotti = torch.empty(num_trials, dtype=torch.float64)
    for prova in range(num_trials):
        a = torch.randn(dim, generator=gen)
        b = torch.randn(dim, generator=gen)
        prodotti[prova] = (a * b).sum()
    varianza_prima = torch.var(prodotti, unbiased=False).item()
    varianza_dopo = torch.var(prodotti / dim ** 0.5, unbiased=False).item()
    return varianza_prima, varianza_dopo


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        interrogazioni, chiavi, valori = project(x, self.W_query, self.W_key, self.W_value)
        punteggi = attention_scores(interrogazioni, chiavi)
        pesi = scaled_attention_weights(punteggi, chiavi.shape[-1])
        return context_vectors(pesi, valori)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        interrogazioni = self.W_query(x)
        chiavi = self.W_key(x)
        valori = self.W_value(x)
        pesi = scaled_attention_weights(attention_scores(interrogazioni, chiavi), chiavi.shape[-1])
        return context_vectors(pesi, valori)


# %% step: masking


def causal_mask(context_length):
    # vero sopra la diagonale (il futuro è nascosto)
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    pesi = attn_weights.masked_fill(causal_mask(n), 0.0)
    return pesi / pesi.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    punteggi = scores.masked_fill(causal_mask(n), -float("inf"))
    return scaled_attention_weights(punteggi, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.spegnimento = nn.Dropout(dropout)
        self.register_buffer("maschera", causal_mask(context_length))

    def forward(self, x):
        lotto, lunghezza, _ = x.shape
        interrogazioni = self.W_query(x)
        chiavi = self.W_key(x)
        valori = self.W_value(x)
        punteggi = interrogazioni @ chiavi.transpose(1, 2)
        punteggi = punteggi.masked_fill(self.maschera[:lunghezza, :lunghezza], -float("inf"))
        pesi = self.spegnimento(F.softmax(punteggi / chiavi.shape[-1] ** 0.5, dim=-1))
        return pesi @ valori


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        teste = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        self.teste = nn.ModuleList(teste)

    def forward(self, x):
        return torch.cat([testa(x) for testa in self.teste], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out deve essere divisibile per num_heads"
        self.num_teste = num_heads
        self.dim_testa = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.proiezione = nn.Linear(d_out, d_out)
        self.spegnimento = nn.Dropout(dropout)
        self.register_buffer("maschera", causal_mask(context_length))

    def forward(self, x):
        lotto, lunghezza, _ = x.shape
        forma = (lotto, lunghezza, self.num_teste, self.dim_testa)
        interrogazioni = self.W_query(x).reshape(forma).transpose(1, 2)
        chiavi = self.W_key(x).reshape(forma).transpose(1, 2)
        valori = self.W_value(x).reshape(forma).transpose(1, 2)
        punteggi = interrogazioni @ chiavi.transpose(-1, -2)
        punteggi = punteggi.masked_fill(self.maschera[:lunghezza, :lunghezza], -float("inf"))
        pesi = self.spegnimento(F.softmax(punteggi / self.dim_testa ** 0.5, dim=-1))
        contesto = (pesi @ valori).transpose(1, 2).reshape(lotto, lunghezza, -1)
        return self.proiezione(contesto)
