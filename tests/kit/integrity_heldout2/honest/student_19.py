# Aufmerksamkeitsmechanismen -- Übungsblatt Kapitel 2/3
# (Kommentare auf Deutsch, sorry)

import math

import torch
from torch import nn


# ---------- Schritt 1: Projektion ----------

def init_qkv_weights(d_in, d_out):
    # Reihenfolge ist wichtig: erst Query, dann Key, dann Value
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    anfragen = torch.matmul(x, W_query)
    schluessel = torch.matmul(x, W_key)
    werte = torch.matmul(x, W_value)
    return anfragen, schluessel, werte


# ---------- Schritt 2: Skalierung ----------

def attention_scores(queries, keys):
    # Skalarprodukt jeder Anfrage mit jedem Schlüssel
    return torch.matmul(queries, torch.transpose(keys, -2, -1))


def scaled_attention_weights(scores, d_k):
    # durch Wurzel aus d_k teilen, dann Softmax über die letzte Achse
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    produkte = torch.sum(q * k, dim=1)
    skaliert = produkte / math.sqrt(dim)
    # Populationsvarianz (wie np.var)
    return torch.var(produkte, unbiased=False).item(), torch.var(skaliert, unbiased=False).item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        anfragen = torch.matmul(x, self.W_query)
        schluessel = torch.matmul(x, self.W_key)
        werte = torch.matmul(x, self.W_value)
        punkte = torch.matmul(anfragen, schluessel.T)
        gewichte = torch.softmax(punkte / math.sqrt(schluessel.shape[-1]), dim=-1)
        return torch.matmul(gewichte, werte)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        # nn.Linear statt nn.Parameter: bessere Initialisierung
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        anfragen = self.W_query(x)
        schluessel = self.W_key(x)
        werte = self.W_value(x)
        punkte = torch.matmul(anfragen, schluessel.T)
        gewichte = torch.softmax(punkte / math.sqrt(schluessel.shape[-1]), dim=-1)
        return torch.matmul(gewichte, werte)


# ---------- Schritt 3: Maskierung ----------

def causal_mask(context_length):
    # True = Zukunft = verborgen (alles oberhalb der Diagonale)
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    sichtbar = torch.tril(torch.ones(n, n, device=attn_weights.device))
    maskiert = attn_weights * sichtbar
    zeilensummen = torch.sum(maskiert, dim=-1, keepdim=True)
    return maskiert / zeilensummen


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    verborgen = causal_mask(n).to(scores.device)
    maskiert = torch.masked_fill(scores, verborgen, -torch.inf)
    return torch.softmax(maskiert / math.sqrt(d_k), dim=-1)


# ---------- Schritt 4: Dropout ----------

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights  # im Eval-Modus unverändert
    if p == 1:
        return torch.zeros_like(attn_weights)  # alles fällt weg
    behalten = torch.rand_like(attn_weights) >= p
    return attn_weights * behalten / (1 - p)  # Überlebende hochskalieren


# ---------- Schritt 5: kausale Aufmerksamkeit ----------

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # als Buffer registriert, damit die Maske mit .to(device) mitwandert
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, anzahl_token, d_in = x.shape
        anfragen = self.W_query(x)
        schluessel = self.W_key(x)
        werte = self.W_value(x)

        punkte = torch.matmul(anfragen, schluessel.transpose(1, 2))
        # Maske auf die tatsächliche Sequenzlänge zuschneiden
        punkte = punkte.masked_fill(self.mask.bool()[:anzahl_token, :anzahl_token], -torch.inf)
        gewichte = torch.softmax(punkte / math.sqrt(schluessel.shape[-1]), dim=-1)
        gewichte = self.dropout(gewichte)
        return torch.matmul(gewichte, werte)


# ---------- Schritt 6: Wrapper mit mehreren Köpfen ----------

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        # Ausgaben der Köpfe entlang der Merkmalsachse aneinanderhängen
        return torch.cat([kopf(x) for kopf in self.heads], dim=-1)


# ---------- Schritt 7: echte Multi-Head-Attention ----------

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out muss durch num_heads teilbar sein")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def _aufteilen(self, t, b, n):
        # (b, n, d_out) -> (b, köpfe, n, head_dim)
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, n, _ = x.shape
        anfragen = self._aufteilen(self.W_query(x), b, n)
        schluessel = self._aufteilen(self.W_key(x), b, n)
        werte = self._aufteilen(self.W_value(x), b, n)

        punkte = torch.matmul(anfragen, schluessel.transpose(2, 3))
        punkte = punkte.masked_fill(self.mask.bool()[:n, :n], -torch.inf)
        gewichte = torch.softmax(punkte / math.sqrt(self.head_dim), dim=-1)
        gewichte = self.dropout(gewichte)

        # zurück: (b, köpfe, n, head_dim) -> (b, n, köpfe, head_dim) -> (b, n, d_out)
        kontext = torch.matmul(gewichte, werte).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(kontext)
