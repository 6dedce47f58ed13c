# Exercício de atenção (comentários em português)
import math
import torch
from torch import nn


# %% step: projection
def init_qkv_weights(d_in, d_out):
    """Sorteia W_consulta, W_chave e W_valor nesta ordem."""
    W_consulta = torch.rand(d_in, d_out)
    W_chave = torch.rand(d_in, d_out)
    W_valor = torch.rand(d_in, d_out)
    return W_consulta, W_chave, W_valor


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# %% step: scaling
def attention_scores(queries, keys):
    chaves_t = keys.transpose(-1, -2)  # troca as duas últimas dimensões
    return torch.matmul(queries, chaves_t)


def scaled_attention_weights(scores, d_k):
    fator = 1 / math.sqrt(d_k)
    return torch.softmax(scores * fator, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gerador = torch.Generator().manual_seed(seed)
    produtos = []
    for _ in range(num_trials):
        consulta = torch.randn(dim, generator=gerador)
        chave = torch.randn(dim, generator=gerador)
        produtos.append(float(consulta @ chave))
    produtos = torch.tensor(produtos, dtype=torch.float64)
    antes = produtos.var().item()
    depois = (produtos / math.sqrt(dim)).var().item()
    return antes, depois


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        consultas = torch.matmul(x, self.W_query)
        chaves = torch.matmul(x, self.W_key)
        valores = torch.matmul(x, self.W_value)
        pontuacoes = torch.matmul(consultas, chaves.t())
        pesos = torch.softmax(pontuacoes / math.sqrt(chaves.size(1)), dim=-1)
        return torch.matmul(pesos, valores)


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
        pontuacoes = torch.matmul(consultas, chaves.t())
        pesos = torch.softmax(pontuacoes / math.sqrt(chaves.size(1)), dim=-1)
        return torch.matmul(pesos, valores)


# %% step: masking
def causal_mask(context_length):
    # verdadeiro acima da diagonal principal
    mascara = torch.zeros(context_length, context_length, dtype=torch.bool)
    linhas, colunas = torch.triu_indices(context_length, context_length, offset=1)
    mascara[linhas, colunas] = True
    return mascara


def mask_and_renormalize(attn_weights):
    n = attn_weights.size(-1)
    pesos = attn_weights.clone()
    pesos[..., causal_mask(n)] = 0.0
    return pesos / pesos.sum(dim=-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    n = scores.size(-1)
    pontuacoes = scores.clone()
    pontuacoes[..., causal_mask(n)] = -torch.inf
    return torch.softmax(pontuacoes / math.sqrt(d_k), dim=-1)


# %% step: dropout
def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    mantidos = torch.bernoulli(torch.ones_like(attn_weights) * (1 - p))
    return attn_weights * mantidos / (1 - p)


# %% step: causal_attention
class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.descarte = nn.Dropout(dropout)
        self.register_buffer("mascara", causal_mask(context_length))

    def forward(self, x):
        _, n_tokens, _ = x.shape
        consultas = self.W_query(x)
        chaves = self.W_key(x)
        valores = self.W_value(x)
        pontuacoes = torch.matmul(consultas, chaves.transpose(1, 2))
        pontuacoes = pontuacoes.masked_fill(self.mascara[:n_tokens, :n_tokens], -torch.inf)
        pesos = torch.softmax(pontuacoes / math.sqrt(chaves.size(-1)), dim=-1)
        pesos = self.descarte(pesos)
        return torch.matmul(pesos, valores)


# %% step: mha_wrapper
class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.cabecas = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([cabeca(x) for cabeca in self.cabecas], dim=-1)


# %% step: multihead_attention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out precisa ser divisível por num_heads"
        self.num_cabecas = num_heads
        self.dim_cabeca = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.proj_saida = nn.Linear(d_out, d_out)
        self.descarte = nn.Dropout(dropout)
        self.register_buffer("mascara", causal_mask(context_length))

    def forward(self, x):
        lote, n_tokens, _ = x.shape
        consultas = self.W_query(x).view(lote, n_tokens, self.num_cabecas, self.dim_cabeca).transpose(1, 2)
        chaves = self.W_key(x).view(lote, n_tokens, self.num_cabecas, self.dim_cabeca).transpose(1, 2)
        valores = self.W_value(x).view(lote, n_tokens, self.num_cabecas, self.dim_cabeca).transpose(1, 2)
        pontuacoes = torch.matmul(consultas, chaves.transpose(-1, -2))
        pontuacoes = pontuacoes.masked_fill(self.mascara[:n_tokens, :n_tokens], -torch.inf)
        pesos = self.descarte(torch.softmax(pontuacoes / math.sqrt(self.dim_cabeca), dim=-1))
        contexto = torch.matmul(pesos, valores).transpose(1, 2).reshape(lote, n_tokens, self.d_out)
        return self.proj_saida(contexto)
