"""Aufmerksamkeitsmechanismen -- Übungsblatt.

Kommentare auf Deutsch. Die öffentlichen Namen bleiben wie vorgegeben.
"""

import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    """Gewichte in der Reihenfolge Anfrage, Schlüssel, Wert ziehen."""
    gewichte = [torch.rand(d_in, d_out) for _ in ("anfrage", "schluessel", "wert")]
    return gewichte[0], gewichte[1], gewichte[2]


def project(x, W_query, W_key, W_value):
    anfragen = x @ W_query
    schluessel = x @ W_key
    werte = x @ W_value
    return anfragen, schluessel, werte


# %% step: scaling


def attention_scores(queries, keys):
    """Skalarprodukt jeder Anfrage mit jedem Schlüssel."""
    return queries @ keys.transpose(-2, -1)


def scaled_attention_weights(scores, d_k):
    """Softmax über die letzte Achse nach Division durch Wurzel(d_k)."""
    skalierung = math.sqrt(d_k)
    return torch.softmax(scores / skalierung, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Varianz von q·k vor und nach der Skalierung."""
    erzeuger = torch.Generator().manual_seed(seed)
    anfragen = torch.randn(num_trials, dim, generator=erzeuger)
    schluessel = torch.randn(num_trials, dim, generator=erzeuger)
    produkte = torch.bmm(anfragen.unsqueeze(1), schluessel.unsqueeze(2)).squeeze()
    varianz_vorher = produkte.var()
    varianz_nachher = (produkte / math.sqrt(dim)).var()
    return float(varianz_vorher), float(varianz_nachher)


def _aufmerksamkeit(anfragen, schluessel, werte, verdeckt=None, ausfall=None):
    """Gemeinsamer Kern: Punkte, Maske, Softmax, Dropout, gewichtete Summe."""
    punkte = anfragen @ schluessel.transpose(-2, -1)
    if verdeckt is not None:
        punkte = punkte.masked_fill(verdeckt, -torch.inf)
    gewichte = torch.softmax(punkte / math.sqrt(schluessel.shape[-1]), dim=-1)
    if ausfall is not None:
        gewichte = ausfall(gewichte)
    return gewichte @ werte


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return _aufmerksamkeit(x @ self.W_query, x @ self.W_key, x @ self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return _aufmerksamkeit(self.W_query(x), self.W_key(x), self.W_value(x))


# %% step: masking


def causal_mask(context_length):
    """True oberhalb der Diagonale = Zukunft wird verdeckt."""
    einsen = torch.ones(context_length, context_length)
    return torch.triu(einsen, diagonal=1) > 0


def mask_and_renormalize(attn_weights):
    laenge = attn_weights.shape[-1]
    untere_dreiecksmatrix = torch.tril(torch.ones(laenge, laenge))
    maskiert = attn_weights * untere_dreiecksmatrix
    zeilensummen = maskiert.sum(dim=-1, keepdim=True)
    return maskiert / zeilensummen


def causal_attention_weights(scores, d_k):
    verdeckt = causal_mask(scores.shape[-1])
    maskiert = scores.masked_fill(verdeckt, -torch.inf)
    return torch.softmax(maskiert / math.sqrt(d_k), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Invertiertes Dropout wie nn.Dropout."""
    ausfall = nn.Dropout(p=p)
    ausfall.train(mode=training)
    return ausfall(attn_weights)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.ausfall = nn.Dropout(dropout)
        self.register_buffer("maske", causal_mask(context_length))

    def forward(self, x):
        anzahl_tokens = x.shape[1]
        return _aufmerksamkeit(
            self.W_query(x), self.W_key(x), self.W_value(x),
            verdeckt=self.maske[:anzahl_tokens, :anzahl_tokens],
            ausfall=self.ausfall,
        )


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.koepfe = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([kopf(x) for kopf in self.koepfe], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out muss durch num_heads teilbar sein")
        self.anzahl_koepfe = num_heads
        self.kopf_dim = d_out // num_heads
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.ausgabe = nn.Linear(d_out, d_out)
        self.ausfall = nn.Dropout(dropout)
        self.register_buffer("maske", causal_mask(context_length))

    def forward(self, x):
        stapel, anzahl_tokens, _ = x.shape
        form = (stapel, anzahl_tokens, self.anzahl_koepfe, self.kopf_dim)
        anfragen = self.W_query(x).view(form).transpose(1, 2)
        schluessel = self.W_key(x).view(form).transpose(1, 2)
        werte = self.W_value(x).view(form).transpose(1, 2)
        kontext = _aufmerksamkeit(
            anfragen, schluessel, werte,
            verdeckt=self.maske[:anzahl_tokens, :anzahl_tokens],
            ausfall=self.ausfall,
        )
        kontext = kontext.transpose(1, 2).reshape(stapel, anzahl_tokens, self.d_out)
        return self.ausgabe(kontext)
