# 注意力机制练习（第二章/第三章）
# 注释用中文写的，方便自己复习

import math

import torch
from torch import nn


# 第一步：投影 ---------------------------------------------------------

def init_qkv_weights(d_in, d_out):
    # 注意顺序：先 query，再 key，最后 value（随机数生成器的顺序很重要）
    W_query = torch.rand(d_in, d_out)
    W_key = torch.rand(d_in, d_out)
    W_value = torch.rand(d_in, d_out)
    return W_query, W_key, W_value


def project(x, W_query, W_key, W_value):
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


# 第二步：缩放 ---------------------------------------------------------

def attention_scores(queries, keys):
    # 每个 query 和每个 key 的点积 -> (..., n, n)
    return torch.matmul(queries, keys.transpose(-2, -1))


def scaled_attention_weights(scores, d_k):
    # 除以 sqrt(d_k)，再在最后一维做 softmax
    return torch.softmax(scores / math.sqrt(d_k), dim=-1)


def context_vectors(attn_weights, values):
    # 上下文向量 = 注意力权重对 value 的加权和
    return torch.matmul(attn_weights, values)


def dot_product_variance(dim, num_trials=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    k = torch.randn(num_trials, dim, generator=g, dtype=torch.float64)
    dots = (q * k).sum(dim=1)  # 每次试验一个点积
    # 总体方差（和 np.var 一样，不做无偏修正）
    var_before = torch.mean((dots - dots.mean()) ** 2).item()
    scaled = dots / math.sqrt(dim)
    var_after = torch.mean((scaled - scaled.mean()) ** 2).item()
    return var_before, var_after


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        # 用 nn.Parameter 包起来才会被训练
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries = torch.matmul(x, self.W_query)
        keys = torch.matmul(x, self.W_key)
        values = torch.matmul(x, self.W_value)
        scores = torch.matmul(queries, keys.T)
        weights = torch.softmax(scores / math.sqrt(keys.shape[-1]), dim=-1)
        return torch.matmul(weights, values)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        # nn.Linear 的初始化更好，训练更稳定
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        scores = torch.matmul(queries, keys.T)
        weights = torch.softmax(scores / math.sqrt(keys.shape[-1]), dim=-1)
        return torch.matmul(weights, values)


# 第三步：掩码 ---------------------------------------------------------

def causal_mask(context_length):
    # 对角线以上为 True（未来的位置，看不到）
    return torch.triu(torch.ones(context_length, context_length), diagonal=1) == 1


def mask_and_renormalize(attn_weights):
    n = attn_weights.shape[-1]
    lower = torch.tril(torch.ones(n, n, device=attn_weights.device))
    masked = attn_weights * lower
    return masked / masked.sum(dim=-1, keepdim=True)  # 每一行重新归一化


def causal_attention_weights(scores, d_k):
    n = scores.shape[-1]
    future = causal_mask(n).to(scores.device)
    # 未来位置填 -inf，softmax 之后就是 0
    masked = scores.masked_fill(future, float("-inf"))
    return torch.softmax(masked / math.sqrt(d_k), dim=-1)


# 第四步：dropout -------------------------------------------------------

def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    if p == 1:
        return torch.zeros_like(attn_weights)
    keep = (torch.rand_like(attn_weights) >= p).float()
    # 保留下来的乘以 1/(1-p)，期望值不变
    return attn_weights * keep / (1 - p)


# 第五步：因果注意力 ---------------------------------------------------

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # register_buffer：掩码会跟着模型一起移动到 GPU
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        scores = torch.matmul(queries, keys.transpose(1, 2))
        # 掩码要截取到实际的序列长度
        scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], float("-inf"))
        weights = torch.softmax(scores / math.sqrt(keys.shape[-1]), dim=-1)
        weights = self.dropout(weights)
        return torch.matmul(weights, values)


# 第六步：多头包装器 ---------------------------------------------------

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        # 每个头的输出在最后一维拼接
        return torch.cat([head(x) for head in self.heads], dim=-1)


# 第七步：多头注意力 ---------------------------------------------------

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out 必须能被 num_heads 整除"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # 合并各个头的输出
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, _ = x.shape
        # (b, n, d_out) -> (b, n, 头数, head_dim) -> (b, 头数, n, head_dim)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

        scores = torch.matmul(queries, keys.transpose(2, 3))
        scores = scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], float("-inf"))
        weights = torch.softmax(scores / math.sqrt(self.head_dim), dim=-1)
        weights = self.dropout(weights)

        # 转置回来再合并所有头：(b, 头数, n, hd) -> (b, n, 头数, hd) -> (b, n, d_out)
        context = torch.matmul(weights, values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context)
