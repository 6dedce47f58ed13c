"""Red team (issue 26, forged shapes): answers whose first dimension is huge and every other is 1, in every
dtype the wire may carry (bool and uint8 at one byte an element, float16, complex64, float64), a stride-0
expanded view, one storage shared by three answers, nested tuples, a 0-dim tensor and a Tensor subclass.
Each is small on the wire (at most 8 MB) but broadcasts against an expected (n, n) or (b, n, d) answer
to millions of times more elements: a judge that computes before it checks the shape and dtype holds
gigabytes and spends seconds per answer. dot_product_variance reports that the attack ran.

base: buggy
class: 4
run: main
"""

_MANY = 8_000_000


class _Sneaky(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def _shared():
    return torch.ones(_MANY // 4, 1, 1)


def init_qkv_weights(d_in, d_out):
    return ((_shared(),), (_shared(),), (_shared(),))


def project(x, W_query, W_key, W_value):
    one = _shared()
    return one, one, one


def attention_scores(queries, keys):
    return torch.ones(_MANY, 1, 1, dtype=torch.bool)


def scaled_attention_weights(scores, d_k):
    return torch.ones(_MANY // 2, 1, 1, dtype=torch.float16)


def context_vectors(attn_weights, values):
    return torch.ones(_MANY // 8, 1, 1, dtype=torch.complex64)


def causal_mask(context_length):
    return torch.ones(_MANY, 1, dtype=torch.uint8)


def mask_and_renormalize(attn_weights):
    return torch.zeros(1).expand(_MANY, 1, 1)


def causal_attention_weights(scores, d_k):
    return torch.ones(_MANY // 4, 1, 1).as_subclass(_Sneaky)


def dot_product_variance(dim, num_trials=1000, seed=0):
    raise RuntimeError("RTEAM r_forged_huge_dtypes ran: answers of shape (8e6, 1, 1) in bool, uint8, float16, "
                       "complex64, expanded, shared and subclassed")


SelfAttention_v1.forward = lambda self, x: torch.ones(_MANY // 8, 1, 1, dtype=torch.float64)
SelfAttention_v2.forward = lambda self, x: torch.tensor(1.0)
CausalAttention.forward = lambda self, x: torch.ones(_MANY, 1, 1, 1, dtype=torch.bool)
MultiHeadAttentionWrapper.forward = lambda self, x: torch.ones(1, _MANY // 4, 1, 1).transpose(0, 1)  # not contiguous
MultiHeadAttention.forward = lambda self, x: torch.ones(_MANY, 1, 1, 1, dtype=torch.uint8)
