import math
import torch
import torch.nn as nn

# step 1 ---------------------------------------------------------------

def init_qkv_weights(d_in, d_out):
    first = torch.rand(d_in, d_out)
    second = torch.rand(d_in, d_out)
    third = torch.rand(d_in, d_out)
    # print(first.shape, second.shape, third.shape)
    return first, second, third


def project(x, W_query, W_key, W_value):
    query_result = x @ W_query
    key_result = x @ W_key
    value_result = x @ W_value
    # print("q", query_result)
    # print("k", key_result)
    return query_result, key_result, value_result


# step 2 ---------------------------------------------------------------

def attention_scores(queries, keys):
    keys_flipped = keys.transpose(-2, -1)
    result = queries @ keys_flipped
    # print(result.shape)
    return result


def scaled_attention_weights(scores, d_k):
    root = d_k ** 0.5
    divided = scores / root
    result = torch.softmax(divided, dim=-1)
    # print(result.sum(dim=-1))  # should be all ones
    return result


def context_vectors(attn_weights, values):
    result = attn_weights @ values
    return result


def dot_product_variance(dim, num_trials=1000, seed=0):
    my_gen = torch.Generator()
    my_gen.manual_seed(seed)
    all_dots = []
    all_scaled = []
    count = 0
    while count < num_trials:
        q = torch.randn(dim, generator=my_gen)
        k = torch.randn(dim, generator=my_gen)
        d = torch.dot(q, k)
        all_dots.append(d.item())
        all_scaled.append(d.item() / (dim ** 0.5))
        count = count + 1
    t1 = torch.tensor(all_dots)
    t2 = torch.tensor(all_scaled)
    before = t1.var().item()
    after = t2.var().item()
    # print(before, after)
    return before, after


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        query_result = x @ self.W_query
        key_result = x @ self.W_key
        value_result = x @ self.W_value
        scores = query_result @ key_result.T
        size_of_key = key_result.shape[-1]
        weights = torch.softmax(scores / size_of_key ** 0.5, dim=-1)
        output = weights @ value_result
        return output


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        query_result = self.W_query(x)
        key_result = self.W_key(x)
        value_result = self.W_value(x)
        scores = query_result @ key_result.T
        size_of_key = key_result.shape[-1]
        weights = torch.softmax(scores / size_of_key ** 0.5, dim=-1)
        output = weights @ value_result
        return output


# step 3 ---------------------------------------------------------------

def causal_mask(context_length):
    all_ones = torch.ones(context_length, context_length)
    above = torch.triu(all_ones, diagonal=1)
    result = above == 1
    # print(result)
    return result


def mask_and_renormalize(attn_weights):
    size = attn_weights.shape[-1]
    lower_ones = torch.tril(torch.ones(size, size))
    zeroed = attn_weights * lower_ones
    sums = zeroed.sum(dim=-1, keepdim=True)
    result = zeroed / sums
    return result


def causal_attention_weights(scores, d_k):
    size = scores.shape[-1]
    the_mask = causal_mask(size)
    filled = scores.masked_fill(the_mask, -torch.inf)
    result = torch.softmax(filled / d_k ** 0.5, dim=-1)
    return result


# step 4 ---------------------------------------------------------------

def attention_dropout(attn_weights, p, training=True):
    if training == True:
        layer = torch.nn.Dropout(p)
        result = layer(attn_weights)
        return result
    else:
        return attn_weights


# step 5 ---------------------------------------------------------------

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("the_mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        how_many_tokens = x.shape[1]
        query_result = self.W_query(x)
        key_result = self.W_key(x)
        value_result = self.W_value(x)
        scores = query_result @ key_result.transpose(1, 2)
        # print(scores.shape)
        small_mask = self.the_mask[:how_many_tokens, :how_many_tokens]
        scores = scores.masked_fill(small_mask == 1, -torch.inf)
        size_of_key = key_result.shape[-1]
        weights = torch.softmax(scores / size_of_key ** 0.5, dim=-1)
        weights = self.dropout(weights)
        output = weights @ value_result
        return output


# step 6 ---------------------------------------------------------------

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        all_heads = []
        for i in range(num_heads):
            one_head = CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            all_heads.append(one_head)
        self.heads = nn.ModuleList(all_heads)

    def forward(self, x):
        outputs = []
        for one_head in self.heads:
            outputs.append(one_head(x))
        result = torch.cat(outputs, dim=-1)
        return result


# step 7 ---------------------------------------------------------------

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("the_mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        batch = x.shape[0]
        how_many_tokens = x.shape[1]
        query_result = self.W_query(x)
        key_result = self.W_key(x)
        value_result = self.W_value(x)
        # split into heads
        query_result = query_result.view(batch, how_many_tokens, self.num_heads, self.head_dim)
        key_result = key_result.view(batch, how_many_tokens, self.num_heads, self.head_dim)
        value_result = value_result.view(batch, how_many_tokens, self.num_heads, self.head_dim)
        # print(query_result.shape)
        query_result = query_result.transpose(1, 2)
        key_result = key_result.transpose(1, 2)
        value_result = value_result.transpose(1, 2)
        scores = query_result @ key_result.transpose(2, 3)
        small_mask = self.the_mask[:how_many_tokens, :how_many_tokens]
        scores = scores.masked_fill(small_mask == 1, -torch.inf)
        weights = torch.softmax(scores / self.head_dim ** 0.5, dim=-1)
        weights = self.dropout(weights)
        output = weights @ value_result
        # print(output.shape)
        output = output.transpose(1, 2)
        output = output.contiguous().view(batch, how_many_tokens, self.d_out)
        output = self.out_proj(output)
        return output
