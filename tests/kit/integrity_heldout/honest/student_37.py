# Домашнее задание: механизм внимания.
# Комментарии на русском, имена переменных латиницей (транслит).
import math

import torch
from torch import nn


# %% step: projection
def init_qkv_weights(d_in, d_out):
    # порядок важен: запрос, ключ, значение
    vesa_zapros = torch.rand(d_in, d_out)
    vesa_klyuch = torch.rand(d_in, d_out)
    vesa_znachenie = torch.rand(d_in, d_out)
    return vesa_zapros, vesa_klyuch, vesa_znachenie


def project(x, W_query, W_key, W_value):
    zaprosy = torch.matmul(x, W_query)
    klyuchi = torch.matmul(x, W_key)
    znacheniya = torch.matmul(x, W_value)
    return zaprosy, klyuchi, znacheniya


# %% step: scaling
def attention_scores(queries, keys):
    # скалярное произведение каждого запроса с каждым ключом
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    return torch.softmax(torch.div(scores, math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    generator = torch.Generator().manual_seed(seed)
    proizvedeniya = torch.zeros(num_trials, dtype=torch.float64)
    for i in range(num_trials):
        zapros = torch.randn(dim, generator=generator, dtype=torch.float64)
        klyuch = torch.randn(dim, generator=generator, dtype=torch.float64)
        proizvedeniya[i] = torch.dot(zapros, klyuch)
    do = proizvedeniya.var().item()
    posle = (proizvedeniya / math.sqrt(dim)).var().item()
    return do, posle


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        zaprosy, klyuchi, znacheniya = project(x, self.W_query, self.W_key, self.W_value)
        ochki = attention_scores(zaprosy, klyuchi)
        vesa = scaled_attention_weights(ochki, klyuchi.shape[-1])
        return context_vectors(vesa, znacheniya)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        zaprosy = self.W_query(x)
        klyuchi = self.W_key(x)
        znacheniya = self.W_value(x)
        vesa = scaled_attention_weights(attention_scores(zaprosy, klyuchi), klyuchi.shape[-1])
        return context_vectors(vesa, znacheniya)


# %% step: masking
def causal_mask(context_length):
    # True выше главной диагонали — будущее скрыто
    stroki = torch.arange(context_length).view(-1, 1)
    stolbcy = torch.arange(context_length).view(1, -1)
    return stolbcy > stroki


def mask_and_renormalize(attn_weights):
    maska = causal_mask(attn_weights.shape[-1])
    vesa = attn_weights.masked_fill(maska, 0.0)
    return vesa / vesa.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    maska = causal_mask(scores.shape[-1])
    return scaled_attention_weights(scores.masked_fill(maska, -torch.inf), d_k)


# %% step: dropout
def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    sloy = nn.Dropout(p)
    return sloy(attn_weights)


# %% step: causal_attention
class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.vykluchenie = nn.Dropout(dropout)  # dropout
        self.register_buffer("maska", causal_mask(context_length))

    def forward(self, x):
        dlina = x.shape[1]
        zaprosy = self.W_query(x)
        klyuchi = self.W_key(x)
        znacheniya = self.W_value(x)
        ochki = torch.matmul(zaprosy, klyuchi.transpose(1, 2))
        ochki = ochki.masked_fill(self.maska[:dlina, :dlina], -torch.inf)
        vesa = torch.softmax(ochki / math.sqrt(klyuchi.shape[-1]), dim=-1)
        vesa = self.vykluchenie(vesa)
        return torch.matmul(vesa, znacheniya)


# %% step: mha_wrapper
class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.golovy = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([golova(x) for golova in self.golovy], dim=-1)


# %% step: multihead_attention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out должно делиться на num_heads"
        self.chislo_golov = num_heads
        self.razmer_golovy = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.vyhod = nn.Linear(d_out, d_out)
        self.vykluchenie = nn.Dropout(dropout)
        self.register_buffer("maska", causal_mask(context_length))

    def forward(self, x):
        partiya, dlina, _ = x.shape

        def razbit(t):
            # (partiya, dlina, d_out) -> (partiya, golovy, dlina, razmer_golovy)
            return t.view(partiya, dlina, self.chislo_golov, self.razmer_golovy).permute(0, 2, 1, 3)

        zaprosy = razbit(self.W_query(x))
        klyuchi = razbit(self.W_key(x))
        znacheniya = razbit(self.W_value(x))
        ochki = torch.matmul(zaprosy, klyuchi.transpose(-2, -1))
        ochki = ochki.masked_fill(self.maska[:dlina, :dlina], -torch.inf)
        vesa = self.vykluchenie(torch.softmax(ochki / math.sqrt(self.razmer_golovy), dim=-1))
        kontekst = torch.matmul(vesa, znacheniya).permute(0, 2, 1, 3).contiguous()
        return self.vyhod(kontekst.view(partiya, dlina, self.d_out))
