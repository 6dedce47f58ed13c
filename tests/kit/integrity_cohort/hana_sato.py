import torch
from torch import nn


# Hana Sato -- attention homework.
# Style: one small helper per idea, then the modules reuse them.

def _causal(T):
    """Lower-triangular ones: 1 where a token may look."""
    return torch.ones(T, T).tril()


def init_qkv_weights(d_in, d_out):
    draws = [torch.rand(d_in, d_out) for _role in ("query", "key", "value")]
    return draws[0], draws[1], draws[2]


def project(x, W_query, W_key, W_value):
    out = []
    for W in (W_query, W_key, W_value):
        out.append(x @ W)
    return out[0], out[1], out[2]


def attention_scores(queries, keys):
    return queries @ keys.transpose(-1, -2)


def scaled_attention_weights(scores, d_k):
    return (scores * d_k ** -0.5).softmax(-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g, dtype=torch.double)
    k = torch.randn(num_trials, dim, generator=g, dtype=torch.double)
    d = torch.linalg.vecdot(q, k)
    return d.var().item(), d.div(dim ** 0.5).var().item()


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), q.shape[-1]), v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(q, k), q.shape[-1]), v)


def causal_mask(context_length):
    return _causal(context_length) == 0


def mask_and_renormalize(attn_weights):
    w = attn_weights * _causal(attn_weights.shape[-1]).to(attn_weights)
    return w / w.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    s = scores.masked_fill(causal_mask(scores.shape[-1]).to(scores.device), float("-inf"))
    return scaled_attention_weights(s, d_k)


def attention_dropout(attn_weights, p, training=True):
    if training and p:
        return nn.functional.dropout(attn_weights, p)
    return attn_weights


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _causal(context_length))

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = attention_scores(q, k).masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        return self.dropout(scaled_attention_weights(s, k.size(-1))) @ v


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads))

    def forward(self, x):
        return torch.cat(list(map(lambda head: head(x), self.heads)), dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("each head needs the same number of features")
        self.num_heads = num_heads
        self.d_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", _causal(context_length))

    def forward(self, x):
        B, T, _ = x.shape
        heads = [self.W_query(x), self.W_key(x), self.W_value(x)]
        q, k, v = (t.unflatten(-1, (self.num_heads, self.d_head)).transpose(1, 2) for t in heads)
        s = attention_scores(q, k).masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        w = self.dropout(scaled_attention_weights(s, self.d_head))
        return self.out_proj((w @ v).transpose(1, 2).flatten(2))
