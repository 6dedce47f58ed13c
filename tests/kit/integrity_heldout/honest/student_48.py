"""注意機構の課題（コメントは日本語）"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# %% step: projection


def init_qkv_weights(d_in, d_out):
    # クエリ・キー・バリューの順に乱数を引く
    omomi = [torch.rand(d_in, d_out) for _ in range(3)]
    return omomi[0], omomi[1], omomi[2]


def project(x, W_query, W_key, W_value):
    kueri = x.matmul(W_query)
    kii = x.matmul(W_key)
    baryuu = x.matmul(W_value)
    return kueri, kii, baryuu


# %% step: scaling


def attention_scores(queries, keys):
    return queries.matmul(keys.transpose(-2, -1))  # 内積


def scaled_attention_weights(scores, d_k):
    return F.softmax(scores.div(math.sqrt(d_k)), dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights.matmul(values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    seiseiki = torch.Generator()  # 生成器
    seiseiki.manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=seiseiki)
    k = torch.randn(num_trials, dim, generator=seiseiki)
    naiseki = q.mul(k).sum(dim=1)
    mae = naiseki.var().item()   # スケーリング前
    ato = naiseki.div(math.sqrt(dim)).var().item()  # スケーリング後
    return mae, ato


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        kueri, kii, baryuu = project(x, self.W_query, self.W_key, self.W_value)
        return context_vectors(scaled_attention_weights(attention_scores(kueri, kii), kii.size(-1)), baryuu)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        kueri, kii, baryuu = self.W_query(x), self.W_key(x), self.W_value(x)
        return context_vectors(scaled_attention_weights(attention_scores(kueri, kii), kii.size(-1)), baryuu)


# %% step: masking


def causal_mask(context_length):
    # 対角線より上（未来）を True にする
    return torch.ones(context_length, context_length, dtype=torch.bool).triu(1)


def mask_and_renormalize(attn_weights):
    kakushi = causal_mask(attn_weights.size(-1))  # 隠す位置
    w = attn_weights.masked_fill(kakushi, 0.0)
    return w.div(w.sum(dim=-1, keepdim=True))


def causal_attention_weights(scores, d_k):
    kakushi = causal_mask(scores.size(-1))
    return F.softmax(scores.masked_fill(kakushi, float("-inf")).div(math.sqrt(d_k)), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    return F.dropout(attn_weights, p=p, training=training)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.doroppu = nn.Dropout(dropout)
        self.register_buffer("kakushi", causal_mask(context_length))

    def forward(self, x):
        nagasa = x.size(1)  # 長さ
        kueri, kii, baryuu = self.W_query(x), self.W_key(x), self.W_value(x)
        sukoa = kueri.matmul(kii.transpose(1, 2)).masked_fill(self.kakushi[:nagasa, :nagasa], float("-inf"))
        w = self.doroppu(F.softmax(sukoa.div(math.sqrt(kii.size(-1))), dim=-1))
        return w.matmul(baryuu)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heddo = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([h(x) for h in self.heddo], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out は num_heads で割り切れる必要があります")
        self.heddo_su = num_heads
        self.heddo_jigen = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.shutsuryoku = nn.Linear(d_out, d_out)  # 出力射影
        self.doroppu = nn.Dropout(dropout)
        self.register_buffer("kakushi", causal_mask(context_length))

    def forward(self, x):
        b, nagasa, _ = x.size()
        bunkatsu = lambda t: t.view(b, nagasa, self.heddo_su, self.heddo_jigen).transpose(1, 2)  # 分割
        kueri = bunkatsu(self.W_query(x))
        kii = bunkatsu(self.W_key(x))
        baryuu = bunkatsu(self.W_value(x))
        sukoa = kueri.matmul(kii.transpose(-2, -1)).masked_fill(self.kakushi[:nagasa, :nagasa], float("-inf"))
        w = self.doroppu(F.softmax(sukoa.div(math.sqrt(self.heddo_jigen)), dim=-1))
        bunmyaku = w.matmul(baryuu).transpose(1, 2).contiguous().view(b, nagasa, -1)  # 文脈
        return self.shutsuryoku(bunmyaku)
