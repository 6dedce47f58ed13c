# Exercício: mecanismos de atenção (comentários em português)
import math

import torch
from torch import nn


def init_qkv_weights(d_in, d_out):
    # ordem dos sorteios: consulta, chave, valor
    pesos = []
    for _nome in ("consulta", "chave", "valor"):
        pesos.append(torch.rand(d_in, d_out))
    W_query, W_key, W_value = pesos
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return x @ W_query, x @ W_key, x @ W_value


def attention_scores(queries, keys):
    # .mT transpõe só as duas últimas dimensões (funciona com lote)
    return queries @ keys.mT


def scaled_attention_weights(scores, d_k):
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    gerador = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gerador, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gerador, dtype=torch.float64)
    produtos = (q.unsqueeze(1) @ k.unsqueeze(-1)).squeeze()
    escalados = produtos / math.sqrt(dim)
    return produtos.var(unbiased=False).item(), escalados.var(unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        consultas = x @ self.W_query
        chaves = x @ self.W_key
        valores = x @ self.W_value
        pesos = torch.softmax(consultas @ chaves.mT / math.sqrt(chaves.shape[-1]), dim=-1)
        return pesos @ valores


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        consultas = self.W_query(x)
        chaves = self.W_key(x)
        valores = self.W_value(x)
        pesos = torch.softmax(consultas @ chaves.mT / math.sqrt(chaves.shape[-1]), dim=-1)
        return pesos @ valores


def causal_mask(context_length):
    # True acima da diagonal = posições futuras (escondidas)
    linhas = torch.arange(context_length).view(-1, 1)
    colunas = torch.arange(context_length).view(1, -1)
    return colunas > linhas


def mask_and_renormalize(attn_weights):
    escondido = causal_mask(attn_weights.shape[-1]).to(attn_weights.device)
    pesos = torch.where(escondido, 0.0, attn_weights)
    return pesos / pesos.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    escondido = causal_mask(scores.shape[-1]).to(scores.device)
    pontuacoes = torch.where(escondido, -math.inf, scores)
    return torch.softmax(pontuacoes / math.sqrt(d_k), dim=-1)


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights  # avaliação: nada muda
    if p == 1:
        return torch.zeros_like(attn_weights)
    manter = torch.rand_like(attn_weights) >= p
    return torch.where(manter, attn_weights / (1 - p), 0.0)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[-2]
        consultas, chaves, valores = self.W_query(x), self.W_key(x), self.W_value(x)
        pontuacoes = (consultas @ chaves.mT).masked_fill(self.mask[:n, :n], -math.inf)
        pesos = torch.softmax(pontuacoes / math.sqrt(chaves.shape[-1]), dim=-1)
        return self.dropout(pesos) @ valores


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        # concatena as saídas de todas as cabeças
        return torch.cat([cabeca(x) for cabeca in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out precisa ser divisível por num_heads")
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
        b, n, _ = x.shape
        # (b, n, d_out) -> (b, cabeças, n, head_dim)
        consultas = self.W_query(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        chaves = self.W_key(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        valores = self.W_value(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        pontuacoes = (consultas @ chaves.mT).masked_fill(self.mask[:n, :n], -math.inf)
        pesos = self.dropout(torch.softmax(pontuacoes / math.sqrt(self.head_dim), dim=-1))
        contexto = (pesos @ valores).transpose(1, 2).flatten(2)  # junta as cabeças de volta
        return self.out_proj(contexto)
