"""Shared by the class-3 attacks (the test puts it between the base and the attack): every call the
grader makes into the submission is logged as a short digest of its name and arguments, so that an
attack can carry the hidden checks' requests (inputs, seeds, shapes) somewhere a student sees.
The test recomputes the same digests in-process to know which ones only hidden checks produce.

role: fragment
"""

import functools as _functools
import hashlib as _hashlib

import torch as _torch

_SEEN = []


def _feed(digest, value):
    if isinstance(value, _torch.Tensor):
        digest.update(repr((tuple(value.shape), str(value.dtype))).encode())
        digest.update(value.detach().cpu().contiguous().numpy().tobytes())
    elif isinstance(value, (tuple, list)):
        for item in value:
            _feed(digest, item)
    elif isinstance(value, dict):
        for key in sorted(value):
            _feed(digest, key)
            _feed(digest, value[key])
    else:
        digest.update(repr(value).encode())


def _digest(name, args, kwargs):
    digest = _hashlib.sha1(name.encode())
    _feed(digest, (args, kwargs))
    return "LEAK" + digest.hexdigest()[:10]


def _logged(name, function):
    @_functools.wraps(function)
    def run(*args, **kwargs):
        _SEEN.append(_digest(name, args[1:] if name.endswith((".__init__", ".forward")) else args, kwargs))
        _on_call(name)
        return function(*args, **kwargs)

    return run


def _on_call(name):
    """What an attack does on each call (replaced by the attack)."""


def _log_everything():
    names = ["init_qkv_weights", "project", "attention_scores", "scaled_attention_weights", "context_vectors",
             "dot_product_variance", "causal_mask", "mask_and_renormalize", "causal_attention_weights",
             "attention_dropout"]
    for name in names:
        if callable(globals().get(name)):
            globals()[name] = _logged(name, globals()[name])
    for name in ("SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper",
                 "MultiHeadAttention"):
        cls = globals().get(name)
        if isinstance(cls, type):
            for method in ("__init__", "forward"):
                setattr(cls, method, _logged(f"{name}.{method}", getattr(cls, method)))
