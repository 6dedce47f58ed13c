"""Escapes the stand-in heads: `head=CausalAttention` as a default argument keeps the student's own
class, whose heads, asked one by one, echo the slices of whatever the wrapper returned; a grader
that compares the wrapper with its own heads' answers sees a perfect concatenation.

base: buggy
class: 7
run: main
"""


class _EchoHead(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False, index=0, wrapper=None):
        super().__init__()
        self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = torch.nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        self.index, self.d_out = index, d_out

    def forward(self, x):
        junk = _junk(x, self.d_out * _HEADS[0])
        return junk[..., self.index * self.d_out:(self.index + 1) * self.d_out]


_HEADS = [1]


def _junk(x, width):
    return x.sum(dim=-1, keepdim=True).expand(*x.shape[:-1], width) * 0.5


class MultiHeadAttentionWrapper(torch.nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False, head=_EchoHead):
        super().__init__()
        _HEADS[0] = num_heads
        self.heads = torch.nn.ModuleList(
            [head(d_in, d_out, context_length, dropout, qkv_bias, index=i) for i in range(num_heads)])
        self.width = d_out * num_heads

    def forward(self, x):
        return _junk(x, self.width)
