# Dikkat mekanizmasi odevi -- yorumlar Turkce
import math

import torch
from torch import nn


# %% step: projection


def init_qkv_weights(d_in, d_out):
    sorgu_agirlik = torch.rand(d_in, d_out)   # sorgu (query)
    anahtar_agirlik = torch.rand(d_in, d_out)  # anahtar (key)
    deger_agirlik = torch.rand(d_in, d_out)    # deger (value)
    return sorgu_agirlik, anahtar_agirlik, deger_agirlik


def project(x, W_query, W_key, W_value):
    sorgular = x @ W_query
    anahtarlar = x @ W_key
    degerler = x @ W_value
    return sorgular, anahtarlar, degerler


# %% step: scaling


def attention_scores(queries, keys):
    return torch.einsum("...qd,...kd->...qk", queries, keys)


def scaled_attention_weights(scores, d_k):
    olcek = d_k ** -0.5
    return torch.softmax(scores * olcek, dim=-1)


def context_vectors(attn_weights, values):
    return torch.einsum("...qk,...kd->...qd", attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    uretec = torch.Generator().manual_seed(seed)
    sorgular = torch.randn(num_trials, dim, generator=uretec)
    anahtarlar = torch.randn(num_trials, dim, generator=uretec)
    carpimlar = torch.einsum("nd,nd->n", sorgular, anahtarlar)
    once = carpimlar.var()
    sonra = (carpimlar * dim ** -0.5).var()
    return once.item(), sonra.item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        sorgular, anahtarlar, degerler = project(x, self.W_query, self.W_key, self.W_value)
        puanlar = attention_scores(sorgular, anahtarlar)
        return context_vectors(scaled_attention_weights(puanlar, anahtarlar.shape[-1]), degerler)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        sorgular = self.W_query(x)
        anahtarlar = self.W_key(x)
        degerler = self.W_value(x)
        puanlar = attention_scores(sorgular, anahtarlar)
        return context_vectors(scaled_attention_weights(puanlar, anahtarlar.shape[-1]), degerler)


# %% step: masking


def causal_mask(context_length):
    # kosegenin ustu True: gelecek gizli
    return ~torch.tril(torch.ones(context_length, context_length, dtype=torch.bool))


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    alt_ucgen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    agirliklar = attn_weights * alt_ucgen
    return agirliklar / agirliklar.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    gizli = causal_mask(scores.shape[-1])
    return scaled_attention_weights(scores.masked_fill(gizli, -torch.inf), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    birak = nn.Dropout(p)
    return birak(attn_weights)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.birakma = nn.Dropout(dropout)
        self.register_buffer("maske", causal_mask(context_length))

    def forward(self, x):
        uzunluk = x.shape[1]
        sorgular = self.W_query(x)
        anahtarlar = self.W_key(x)
        degerler = self.W_value(x)
        puanlar = torch.einsum("bqd,bkd->bqk", sorgular, anahtarlar)
        puanlar = puanlar.masked_fill(self.maske[:uzunluk, :uzunluk], -torch.inf)
        agirliklar = self.birakma(torch.softmax(puanlar * anahtarlar.shape[-1] ** -0.5, dim=-1))
        return torch.einsum("bqk,bkd->bqd", agirliklar, degerler)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.kafalar = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)
        )

    def forward(self, x):
        return torch.cat([kafa(x) for kafa in self.kafalar], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.kafa_sayisi = num_heads
        self.kafa_boyutu = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.cikis = nn.Linear(d_out, d_out)
        self.birakma = nn.Dropout(dropout)
        self.register_buffer("maske", causal_mask(context_length))

    def forward(self, x):
        b, n, _ = x.shape
        h, d = self.kafa_sayisi, self.kafa_boyutu
        sorgular = self.W_query(x).view(b, n, h, d)
        anahtarlar = self.W_key(x).view(b, n, h, d)
        degerler = self.W_value(x).view(b, n, h, d)
        puanlar = torch.einsum("bqhd,bkhd->bhqk", sorgular, anahtarlar)
        puanlar = puanlar.masked_fill(self.maske[:n, :n], -torch.inf)
        agirliklar = self.birakma(torch.softmax(puanlar * d ** -0.5, dim=-1))
        baglam = torch.einsum("bhqk,bkhd->bqhd", agirliklar, degerler).reshape(b, n, h * d)
        return self.cikis(baglam)
