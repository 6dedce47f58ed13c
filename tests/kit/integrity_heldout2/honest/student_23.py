"""Mécanismes d'attention, pas à pas : ma copie de travail (commentaires en français)."""

import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    """Draw the query, key and value weight matrices, in that order.

    Each is a `(d_in, d_out)` tensor drawn with `torch.rand` (the caller seeds
    the generator, so the order of the three draws matters).
    Returns the tuple `(W_query, W_key, W_value)`.
    """
    # trois tirages, dans l'ordre requête, clé, valeur
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)


def project(x, W_query, W_key, W_value):
    """Project inputs `x` of shape `(..., n, d_in)` to queries, keys and values.

    Returns `(queries, keys, values)`, each of shape `(..., n, d_out)`.
    """
    requetes = x @ W_query
    cles = x @ W_key
    valeurs = x @ W_value
    return requetes, cles, valeurs


# %% step: scaling


def attention_scores(queries, keys):
    """Unnormalised attention scores: the dot product of every query with every key.

    `queries` and `keys` have shape `(..., n, d_k)`; the result has shape
    `(..., n, n)` with entry `[i, j]` = query i · key j.
    """
    # produit scalaire de chaque requête avec chaque clé
    return queries @ keys.transpose(-1, -2)


def scaled_attention_weights(scores, d_k):
    """Softmax of `scores / sqrt(d_k)` over the last axis (each row sums to one)."""
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    """Each context vector is the attention-weighted sum of the value vectors."""
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    """Why we scale: the variance of q·k before and after dividing by sqrt(dim).

    Draw `num_trials` pairs of standard-normal vectors q, k of length `dim`
    (from a generator seeded with `seed`) and return the pair of floats
    `(variance_before, variance_after)`: the variance of q·k and of q·k / sqrt(dim).
    """
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=gen, dtype=torch.float64)
    produits = (q * k).sum(dim=-1)
    # variance « population » : même convention que np.var
    avant = produits.var(unbiased=False).item()
    apres = (produits / math.sqrt(dim)).var(unbiased=False).item()
    return avant, apres


class SelfAttention_v1(nn.Module):
    """Self-attention with raw `nn.Parameter` weight matrices of shape `(d_in, d_out)`.

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        # on réutilise les fonctions des étapes précédentes
        requetes, cles, valeurs = project(x, self.W_query, self.W_key, self.W_value)
        poids = scaled_attention_weights(attention_scores(requetes, cles), cles.shape[-1])
        return context_vectors(poids, valeurs)


class SelfAttention_v2(nn.Module):
    """Self-attention with `nn.Linear` projections (bias only if `qkv_bias`).

    Takes one sequence `x` of shape `(n, d_in)` and returns `(n, d_out)`.
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        requetes, cles, valeurs = self.W_query(x), self.W_key(x), self.W_value(x)
        poids = scaled_attention_weights(attention_scores(requetes, cles), cles.shape[-1])
        return context_vectors(poids, valeurs)


# %% step: masking


def causal_mask(context_length):
    """Boolean `(n, n)` mask that is True where a position is hidden.

    Token i may look at tokens 0..i, so everything strictly above the
    diagonal is hidden.
    """
    # True au-dessus de la diagonale : le futur est caché
    return torch.triu(torch.ones(context_length, context_length), diagonal=1).bool()


def mask_and_renormalize(attn_weights):
    """Zero the future in already-normalised weights `(..., n, n)`, then renormalise each row."""
    cache = causal_mask(attn_weights.shape[-1]).to(attn_weights.device)
    poids = attn_weights.masked_fill(cache, 0.0)
    return poids / poids.sum(dim=-1, keepdim=True)  # chaque ligne somme à 1


def causal_attention_weights(scores, d_k):
    """Fill the future of `scores` `(..., n, n)` with -inf, then take the scaled softmax."""
    cache = causal_mask(scores.shape[-1]).to(scores.device)
    return scaled_attention_weights(scores.masked_fill(cache, -torch.inf), d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    """Inverted dropout on the attention weights, as `nn.Dropout(p)` does it.

    While training, each weight is zeroed with probability `p` and the
    survivors are multiplied by `1 / (1 - p)`; when not training, the weights
    come back unchanged.
    """
    if not training:
        return attn_weights
    if p == 1:  # tout est abandonné
        return torch.zeros_like(attn_weights)
    garde = torch.rand_like(attn_weights) >= p
    return attn_weights * garde / (1 - p)  # on remet à l'échelle les survivants


# %% step: causal_attention


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout on the attention weights.

    Input `(b, n, d_in)` with `n <= context_length`; output `(b, n, d_out)`.
    The checks read the chapter's attributes: `W_query`, `W_key`, `W_value`
    (`nn.Linear(d_in, d_out, bias=qkv_bias)`), `dropout` (`nn.Dropout`), and the
    causal mask as a buffer named `mask` (`self.register_buffer`: it moves with
    the module to the GPU).
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        n = x.shape[1]
        requetes, cles, valeurs = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = attention_scores(requetes, cles).masked_fill(self.mask[:n, :n], -torch.inf)
        poids = self.dropout(scaled_attention_weights(scores, cles.shape[-1]))
        return context_vectors(poids, valeurs)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    """`num_heads` independent `CausalAttention` heads whose outputs are concatenated.

    Output `(b, n, num_heads * d_out)`.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)
        )

    def forward(self, x):
        # on concatène les sorties des têtes sur la dernière dimension
        return torch.cat([tete(x) for tete in self.heads], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention with one projection per role, split into heads.

    `d_out` must be divisible by `num_heads`; each head works on
    `head_dim = d_out // num_heads` features. Output `(b, n, d_out)`.
    The checks read the chapter's attributes: `W_query`, `W_key`, `W_value`
    (`nn.Linear(d_in, d_out, bias=qkv_bias)`), `out_proj` (`nn.Linear(d_out, d_out)`),
    `dropout` (`nn.Dropout`), and the causal mask as a buffer named `mask`.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out doit être divisible par num_heads")
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

        def decouper(t):
            # (b, n, d_out) -> (b, têtes, n, head_dim)
            return t.reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)

        requetes = decouper(self.W_query(x))
        cles = decouper(self.W_key(x))
        valeurs = decouper(self.W_value(x))
        scores = attention_scores(requetes, cles).masked_fill(self.mask[:n, :n], -torch.inf)
        poids = self.dropout(scaled_attention_weights(scores, self.head_dim))
        contexte = context_vectors(poids, valeurs)
        # on recolle les têtes : (b, têtes, n, hd) -> (b, n, d_out)
        contexte = contexte.transpose(1, 2).reshape(b, n, self.d_out)
        return self.out_proj(contexte)
