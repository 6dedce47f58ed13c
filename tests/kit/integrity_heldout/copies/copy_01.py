import math
import torch
from torch import nn
from torch.nn import functional as F


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.to_q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.to_k = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.to_v = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.proj_out = nn.Linear(d_out, d_out)
        self.drop_w = nn.Dropout(dropout)
        self.heads = num_heads
        self.width = d_out
        self.register_buffer("lower_tri", torch.tril(torch.ones(context_length, context_length))
                             .view(1, 1, context_length, context_length))

    def forward(self, x):
        bsz, seqlen, _ = x.size()
        ch = self.width
        hs = ch // self.heads
        qry = self.to_q(x).view(bsz, seqlen, self.heads, hs).permute(0, 2, 1, 3)
        key_t = self.to_k(x).view(bsz, seqlen, self.heads, hs).permute(0, 2, 1, 3)
        val = self.to_v(x).view(bsz, seqlen, self.heads, hs).permute(0, 2, 1, 3)
        att_mat = torch.matmul(qry, key_t.transpose(-2, -1)) / math.sqrt(key_t.size(-1))
        att_mat = att_mat.masked_fill(self.lower_tri[:, :, :seqlen, :seqlen] == 0, float('-inf'))
        att_mat = F.softmax(att_mat, dim=-1)
        att_mat = self.drop_w(att_mat)
        out = torch.matmul(att_mat, val)
        out = out.permute(0, 2, 1, 3).contiguous().view(bsz, seqlen, ch)
        return self.proj_out(out)


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.to_q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.to_k = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.to_v = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.register_buffer('lower_tri', torch.tril(torch.ones(context_length, context_length)))
        self.drop_w = nn.Dropout(dropout)

    def forward(self, x):
        bsz, seqlen, ch = x.shape
        qry = self.to_q(x)
        key_t = self.to_k(x)
        att_mat = torch.matmul(qry, key_t.transpose(-2, -1)) / math.sqrt(key_t.shape[-1])
        att_mat = att_mat.masked_fill(self.lower_tri[:seqlen, :seqlen] == 0, float('-inf'))
        att_mat = F.softmax(att_mat, dim=-1)
        att_mat = self.drop_w(att_mat)
        val = self.to_v(x)
        return torch.matmul(att_mat, val)


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([hd(x) for hd in self.heads], dim=-1)


def init_qkv_weights(d_in, d_out):
    m_q = torch.rand(d_in, d_out)
    m_k = torch.rand(d_in, d_out)
    m_v = torch.rand(d_in, d_out)
    return m_q, m_k, m_v


def project(x, W_query, W_key, W_value):
    qry = torch.matmul(x, W_query)
    key_t = torch.matmul(x, W_key)
    val = torch.matmul(x, W_value)
    return qry, key_t, val


def causal_mask(context_length):
    lower_tri = torch.tril(torch.ones(context_length, context_length))
    return lower_tri == 0


def mask_and_renormalize(attn_weights):
    seqlen = attn_weights.shape[-1]
    lower_tri = torch.tril(torch.ones(seqlen, seqlen))
    att_mat = attn_weights.masked_fill(lower_tri == 0, 0.0)
    return att_mat / att_mat.sum(-1, keepdim=True)


def causal_attention_weights(scores, d_k):
    seqlen = scores.shape[-1]
    lower_tri = torch.tril(torch.ones(seqlen, seqlen))
    att_mat = scores.masked_fill(lower_tri == 0, float('-inf'))
    return F.softmax(att_mat / math.sqrt(d_k), dim=-1)


def attention_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    att_mat = scores / math.sqrt(d_k)
    return F.softmax(att_mat, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    rng = torch.Generator().manual_seed(seed)
    qry = torch.randn(num_trials, dim, generator=rng)
    key_t = torch.randn(num_trials, dim, generator=rng)
    att_mat = (qry * key_t).sum(-1)
    return att_mat.var().item(), (att_mat / math.sqrt(dim)).var().item()


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p, training)


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        seqlen, ch = x.shape
        qry = torch.matmul(x, self.W_query)
        key_t = torch.matmul(x, self.W_key)
        val = torch.matmul(x, self.W_value)
        att_mat = torch.matmul(qry, key_t.transpose(-2, -1)) / math.sqrt(key_t.shape[-1])
        att_mat = F.softmax(att_mat, dim=-1)
        return torch.matmul(att_mat, val)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.to_q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.to_k = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.to_v = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        qry = self.to_q(x)
        key_t = self.to_k(x)
        val = self.to_v(x)
        att_mat = torch.matmul(qry, key_t.transpose(-2, -1)) / math.sqrt(key_t.shape[-1])
        att_mat = F.softmax(att_mat, dim=-1)
        return torch.matmul(att_mat, val)
