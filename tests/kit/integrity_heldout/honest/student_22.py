# zhuyili jizhi (attention) zuoye
# bianliang ming yong pinyin, zhushi yong zhongwen
import math

import torch
from torch import nn

# %% step: projection


def init_qkv_weights(d_in, d_out):
    # 顺序: 查询 -> 键 -> 值
    chaxun_quanzhong = torch.rand(d_in, d_out)
    jian_quanzhong = torch.rand(d_in, d_out)
    zhi_quanzhong = torch.rand(d_in, d_out)
    return chaxun_quanzhong, jian_quanzhong, zhi_quanzhong


def project(x, W_query, W_key, W_value):
    chaxun = torch.matmul(x, W_query)
    jian = torch.matmul(x, W_key)
    zhi = torch.matmul(x, W_value)
    return chaxun, jian, zhi


# %% step: scaling


def attention_scores(queries, keys):
    # 每个查询和每个键做点积
    return torch.matmul(queries, keys.transpose(-1, -2))


def scaled_attention_weights(scores, d_k):
    suofang = scores / (d_k ** 0.5)  # 缩放
    return torch.softmax(suofang, dim=-1)


def context_vectors(attn_weights, values):
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    shengchengqi = torch.Generator()
    shengchengqi.manual_seed(seed)
    diancheng = []
    for _ in range(num_trials):
        q = torch.randn(dim, generator=shengchengqi)
        k = torch.randn(dim, generator=shengchengqi)
        diancheng.append(torch.sum(q * k))
    diancheng = torch.stack(diancheng)
    fangcha_qian = torch.var(diancheng).item()
    fangcha_hou = torch.var(diancheng / (dim ** 0.5)).item()
    return fangcha_qian, fangcha_hou


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.weidu = d_out

    def forward(self, x):
        chaxun = torch.matmul(x, self.W_query)
        jian = torch.matmul(x, self.W_key)
        zhi = torch.matmul(x, self.W_value)
        defen = torch.matmul(chaxun, jian.transpose(0, 1))
        quanzhong = torch.softmax(defen / (self.weidu ** 0.5), dim=-1)
        return torch.matmul(quanzhong, zhi)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.weidu = d_out

    def forward(self, x):
        chaxun = self.W_query(x)
        jian = self.W_key(x)
        zhi = self.W_value(x)
        defen = torch.matmul(chaxun, jian.transpose(0, 1))
        quanzhong = torch.softmax(defen / (self.weidu ** 0.5), dim=-1)
        return torch.matmul(quanzhong, zhi)


# %% step: masking


def causal_mask(context_length):
    # 对角线以上为 True (未来的位置被遮住)
    xia_sanjiao = torch.tril(torch.ones(context_length, context_length))
    return xia_sanjiao == 0


def mask_and_renormalize(attn_weights):
    changdu = attn_weights.shape[-1]
    zhezhao = torch.tril(torch.ones(changdu, changdu))
    bei_zhezhu = attn_weights * zhezhao
    hang_he = bei_zhezhu.sum(dim=-1, keepdim=True)
    return bei_zhezhu / hang_he


def causal_attention_weights(scores, d_k):
    zhezhao = causal_mask(scores.shape[-1])
    defen = scores.masked_fill(zhezhao, float('-inf'))
    return torch.softmax(defen / (d_k ** 0.5), dim=-1)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if training == False:
        return attn_weights
    baoliu = (torch.rand(attn_weights.shape) >= p).to(attn_weights.dtype)  # 保留的位置
    return attn_weights * baoliu / (1 - p)


# %% step: causal_attention


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.diuqi = nn.Dropout(dropout)  # 丢弃
        self.register_buffer('zhezhao', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        pici, changdu, _ = x.shape
        chaxun = self.W_query(x)
        jian = self.W_key(x)
        zhi = self.W_value(x)
        defen = torch.matmul(chaxun, jian.transpose(1, 2))
        defen = defen.masked_fill(self.zhezhao[:changdu, :changdu].bool(), float('-inf'))
        quanzhong = torch.softmax(defen / (jian.shape[-1] ** 0.5), dim=-1)
        quanzhong = self.diuqi(quanzhong)
        return torch.matmul(quanzhong, zhi)


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.tou = nn.ModuleList()  # 头
        for i in range(num_heads):
            self.tou.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        return torch.cat([t(x) for t in self.tou], dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out 必须能被 num_heads 整除"
        self.d_out = d_out
        self.tou_shu = num_heads
        self.tou_weidu = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.shuchu_touying = nn.Linear(d_out, d_out)  # 输出投影
        self.diuqi = nn.Dropout(dropout)
        self.register_buffer('zhezhao', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        pici, changdu, _ = x.shape
        chaxun = self.W_query(x).view(pici, changdu, self.tou_shu, self.tou_weidu)
        jian = self.W_key(x).view(pici, changdu, self.tou_shu, self.tou_weidu)
        zhi = self.W_value(x).view(pici, changdu, self.tou_shu, self.tou_weidu)
        # 把头的维度放到前面
        chaxun = chaxun.transpose(1, 2)
        jian = jian.transpose(1, 2)
        zhi = zhi.transpose(1, 2)
        defen = torch.matmul(chaxun, jian.transpose(2, 3))
        defen = defen.masked_fill(self.zhezhao[:changdu, :changdu].bool(), float('-inf'))
        quanzhong = torch.softmax(defen / (self.tou_weidu ** 0.5), dim=-1)
        quanzhong = self.diuqi(quanzhong)
        shangxiawen = torch.matmul(quanzhong, zhi).transpose(1, 2)  # 上下文
        shangxiawen = shangxiawen.contiguous().view(pici, changdu, self.d_out)
        return self.shuchu_touying(shangxiawen)
