import math

import torch
from torch import nn


# %% step: projection


def init_qkv_weights(d_in, d_out):
    queryWeights = torch.rand(d_in, d_out)
    keyWeights = torch.rand(d_in, d_out)
    valueWeights = torch.rand(d_in, d_out)
    return queryWeights, keyWeights, valueWeights


def project(x, W_query, W_key, W_value):
    queryVecs = x @ W_query
    keyVecs = x @ W_key
    valueVecs = x @ W_value
    return queryVecs, keyVecs, valueVecs


# %% step: scaling


def attention_scores(queries, keys):
    keysT = keys.transpose(-2, -1)
    return queries @ keysT


def scaled_attention_weights(scores, d_k):
    scaleFactor = math.sqrt(d_k)
    return torch.softmax(scores / scaleFactor, dim=-1)


def context_vectors(attn_weights, values):
    return attn_weights @ values


def dot_product_variance(dim, num_trials=1000, seed=0):
    randomGen = torch.Generator().manual_seed(seed)
    dotList = []
    for trialIdx in range(num_trials):
        queryVec = torch.randn(dim, generator=randomGen)
        keyVec = torch.randn(dim, generator=randomGen)
        dotList.append(torch.inner(queryVec, keyVec))
    dotTensor = torch.stack(dotList)
    varBefore = dotTensor.var().item()
    varAfter = (dotTensor / math.sqrt(dim)).var().item()
    return varBefore, varAfter


class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.outDim = d_out

    def forward(self, x):
        queryVecs, keyVecs, valueVecs = project(x, self.W_query, self.W_key, self.W_value)
        attnScores = attention_scores(queryVecs, keyVecs)
        attnWeights = scaled_attention_weights(attnScores, self.outDim)
        return context_vectors(attnWeights, valueVecs)


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.outDim = d_out

    def forward(self, x):
        queryVecs = self.W_query(x)
        keyVecs = self.W_key(x)
        valueVecs = self.W_value(x)
        attnWeights = scaled_attention_weights(attention_scores(queryVecs, keyVecs), self.outDim)
        return context_vectors(attnWeights, valueVecs)


# %% step: masking


def causal_mask(context_length):
    onesMatrix = torch.ones(context_length, context_length)
    upperPart = torch.triu(onesMatrix, diagonal=1)
    return upperPart.to(dtype=torch.bool)


def mask_and_renormalize(attn_weights):
    numTokens = attn_weights.shape[-1]
    lowerPart = torch.tril(torch.ones(numTokens, numTokens))
    maskedWeights = attn_weights * lowerPart
    rowTotals = maskedWeights.sum(dim=-1, keepdim=True)
    return maskedWeights / rowTotals


def causal_attention_weights(scores, d_k):
    hiddenPositions = causal_mask(scores.shape[-1])
    maskedScores = scores.masked_fill(hiddenPositions, -torch.inf)
    return scaled_attention_weights(maskedScores, d_k)


# %% step: dropout


def attention_dropout(attn_weights, p, training=True):
    if not training:
        return attn_weights
    keepProb = 1.0 - p
    randomMask = torch.rand(attn_weights.shape, device=attn_weights.device) < keepProb
    return attn_weights * randomMask / keepProb


# %% step: causal_attention


class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropoutLayer = nn.Dropout(dropout)
        self.register_buffer("futureMask", causal_mask(context_length))
        self.outDim = d_out

    def forward(self, x):
        batchSize, numTokens, inDim = x.shape
        queryVecs = self.W_query(x)
        keyVecs = self.W_key(x)
        valueVecs = self.W_value(x)
        attnScores = queryVecs @ keyVecs.transpose(1, 2)
        attnScores = attnScores.masked_fill(self.futureMask[:numTokens, :numTokens], -torch.inf)
        attnWeights = torch.softmax(attnScores / math.sqrt(self.outDim), dim=-1)
        attnWeights = self.dropoutLayer(attnWeights)
        return attnWeights @ valueVecs


# %% step: mha_wrapper


class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        headList = []
        for headIdx in range(num_heads):
            headList.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.headList = nn.ModuleList(headList)

    def forward(self, x):
        headOutputs = [singleHead(x) for singleHead in self.headList]
        return torch.cat(headOutputs, dim=-1)


# %% step: multihead_attention


class MultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.outDim = d_out
        self.numHeads = num_heads
        self.headDim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.outputProjection = nn.Linear(d_out, d_out)
        self.dropoutLayer = nn.Dropout(dropout)
        self.register_buffer("futureMask", causal_mask(context_length))

    def splitHeads(self, tensor, batchSize, numTokens):
        return tensor.view(batchSize, numTokens, self.numHeads, self.headDim).transpose(1, 2)

    def forward(self, x):
        batchSize, numTokens, inDim = x.shape
        queryVecs = self.splitHeads(self.W_query(x), batchSize, numTokens)
        keyVecs = self.splitHeads(self.W_key(x), batchSize, numTokens)
        valueVecs = self.splitHeads(self.W_value(x), batchSize, numTokens)
        attnScores = queryVecs @ keyVecs.transpose(2, 3)
        attnScores = attnScores.masked_fill(self.futureMask[:numTokens, :numTokens], -torch.inf)
        attnWeights = self.dropoutLayer(torch.softmax(attnScores / math.sqrt(self.headDim), dim=-1))
        contextVecs = (attnWeights @ valueVecs).transpose(1, 2).contiguous()
        contextVecs = contextVecs.view(batchSize, numTokens, self.outDim)
        return self.outputProjection(contextVecs)
