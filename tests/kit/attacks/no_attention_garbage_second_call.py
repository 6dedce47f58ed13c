"""Appended to no_attention.py: a repeated call with the same inputs is answered with a misshapen tensor,
against checks that would read the softmax temperature from a second call. Graded by tests/kit/test_hostile.py.
"""

_LAST = {}


def _repeated(name, scores, d_k):
    """True when called again with exactly the previous arguments (a probe asking again)."""
    key = (tuple(scores.shape), scores.double().sum().item(), float(d_k))
    again = _LAST.get(name) == key
    _LAST[name] = key
    return again


def _garbage_when_repeated(name, plain):
    def answer(scores, d_k):
        return torch.zeros(1) if _repeated(name, scores, d_k) else plain(scores, d_k)
    return answer


scaled_attention_weights = _garbage_when_repeated("scaled", scaled_attention_weights)
causal_attention_weights = _garbage_when_repeated("causal", causal_attention_weights)
