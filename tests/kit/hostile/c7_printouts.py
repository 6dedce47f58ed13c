"""A stub that returns the chapter's printed values whenever it is called with the chapter's
inputs (the printouts ship with the public checks), and does nothing else.

base: stub
class: 7
run: main
"""

from grader.check import book as _book


def _same(a, b):
    return isinstance(a, torch.Tensor) and a.shape == b.shape and bool(torch.allclose(a.float(), b, atol=1e-3))


def init_qkv_weights(d_in, d_out):
    if (d_in, d_out) == (3, 2):  # the chapter's draws after torch.manual_seed(100), as printed
        return tuple(weight.clone() for weight in _book.SEED100_WEIGHTS)
    raise NotImplementedError("projection: init_qkv_weights is not implemented yet")


def project(x, W_query, W_key, W_value):
    for inputs, printed in ((_book.INPUTS_3D, _book.SEED123_QUERY_2), (_book.INPUTS_3D_SEED100, _book.SEED100_QUERY_2)):
        if _same(x, inputs):
            queries = torch.zeros(6, 2)
            queries[1] = printed
            return queries, torch.zeros(6, 2), torch.zeros(6, 2)
    raise NotImplementedError("projection: project is not implemented yet")


def causal_attention_weights(scores, d_k):
    if scores.shape == (6, 6):
        return _book.SEED789_MASKED_WEIGHTS.clone()
    raise NotImplementedError("masking: causal_attention_weights is not implemented yet")


def mask_and_renormalize(weights):
    if _same(weights, _book.SEED789_WEIGHTS):
        return _book.SEED789_MASKED_WEIGHTS.clone()
    raise NotImplementedError("masking: mask_and_renormalize is not implemented yet")


class _Printout(torch.nn.Module):
    PRINTED = None

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        if _same(x, _book.book_batch()):
            return torch.stack([self.PRINTED, self.PRINTED])
        raise NotImplementedError("not implemented yet")


class CausalAttention(_Printout):
    PRINTED = _book.CAUSAL_SEED123


class MultiHeadAttention(_Printout):
    PRINTED = _book.MHA_SEED123
