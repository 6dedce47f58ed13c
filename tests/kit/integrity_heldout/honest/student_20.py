# Exercice : mécanismes d'attention
# (commentaires en français)

import math
import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    # on tire requête, clé puis valeur, dans cet ordre
    poids_requete = torch.rand(d_in, d_out)
    poids_cle = torch.rand(d_in, d_out)
    poids_valeur = torch.rand(d_in, d_out)
    return poids_requete, poids_cle, poids_valeur


def project(x, W_query, W_key, W_value):
    requetes = torch.matmul(x, W_query)
    cles = torch.matmul(x, W_key)
    valeurs = torch.matmul(x, W_value)
    return requetes, cles, valeurs


# %% step: scaling


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    # mise à l'échelle par la racine de d_k puis softmax sur le dernier axe
    return nn.functional.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    generateur = torch.Generator().manual_seed(seed)
    produits = torch.tensor([
        torch.dot(torch.randn(dim, generator=generateur), torch.randn(dim, generator=generateur)).item()
        for _ in range(num_trials)
    ])
    variance_avant = produits.var().item()
    variance_apres = (produits / math.sqrt(dim)).var().item()
    return variance_avant, variance_apres


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        requetes, cles, valeurs = project(x, self.W_query, self.W_key, self.W_value)
        poids = scaled_attention_weights(attention_scores(requetes, cles), cles.size(-1))
        return context_vectors(poids, valeurs)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        requetes = self.W_query(x)
        cles = self.W_key(x)
        valeurs = self.W_value(x)
        poids = scaled_attention_weights(attention_scores(requetes, cles), cles.size(-1))
        return context_vectors(poids, valeurs)


# %% step: masking


def causal_mask(context_length):
    # vrai au-dessus de la diagonale : le futur est caché
    return torch.ones(context_length, context_length).triu(1).bool()


def mask_and_renormalize(attn_weights):
    taille = attn_weights.size(-1)
    masque = causal_mask(taille)
    poids = attn_weights.masked_fill(masque, 0.0)
    return poids / poids.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    masque = causal_mask(scores.size(-1))
    return scaled_attention_weights(scores.masked_fill(masque, -math.inf), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return nn.functional.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.abandon = nn.Dropout(dropout)
        self.register_buffer("masque", causal_mask(context_length))

    def forward(self, x):
        nb_jetons = x.size(1)
        requetes = self.W_query(x)
        cles = self.W_key(x)
        valeurs = self.W_value(x)
        scores = torch.matmul(requetes, cles.transpose(1, 2))
        scores = scores.masked_fill(self.masque[:nb_jetons, :nb_jetons], -math.inf)
        poids = nn.functional.softmax(scores / math.sqrt(cles.size(-1)), dim=-1)
        poids = self.abandon(poids)
        return torch.matmul(poids, valeurs)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.tetes = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([tete(x) for tete in self.tetes], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out doit être divisible par num_heads"
        self.nb_tetes = num_heads
        self.dim_tete = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.projection_sortie = nn.Linear(d_out, d_out)
        self.abandon = nn.Dropout(dropout)
        self.register_buffer("masque", causal_mask(context_length))

    def forward(self, x):
        lot, nb_jetons, _ = x.size()

        def decouper(t):
            return t.reshape(lot, nb_jetons, self.nb_tetes, self.dim_tete).permute(0, 2, 1, 3)

        requetes = decouper(self.W_query(x))
        cles = decouper(self.W_key(x))
        valeurs = decouper(self.W_value(x))
        scores = torch.matmul(requetes, cles.transpose(-2, -1))
        scores = scores.masked_fill(self.masque[:nb_jetons, :nb_jetons], -math.inf)
        poids = self.abandon(nn.functional.softmax(scores / math.sqrt(self.dim_tete), dim=-1))
        contexte = torch.matmul(poids, valeurs).permute(0, 2, 1, 3)
        contexte = contexte.reshape(lot, nb_jetons, self.nb_tetes * self.dim_tete)
        return self.projection_sortie(contexte)
