"""Red team (issue 26, forged shapes on the wire): patches the grader's own encoder inside the worker and
rewrites every tensor it sends, one forgery per answer in turn: a list nested 5000 deep, a bool tensor of
16e6 elements (16 MB, shape (16e6, 1, 1)), a 4-byte float32 claiming shape (12e6, 1, 1) with stride 0,
a shape whose product overflows 64 bits to 0 ([2**62, 4], no data), a shape of 100 dimensions, negative
and fractional sizes, the devices "meta" and "cuda:0", and dtypes the judge may not expect (complex128,
float8_e4m3fn, qint8, object). A judge that builds or compares before it validates holds the memory,
spends the time, or raises something other than a verdict. dot_product_variance reports that it ran.

base: buggy
class: 4
run: main
"""

import sys as _sys

import grader.check.wire as _wire

_sys.setrecursionlimit(60000)
_honest_encode = _wire.encode
_TURN = [0]


def _tensor(dtype, shape, data, **extra):
    return {"$tensor": dict({"dtype": dtype, "shape": shape, "data": data, "device": "cpu"}, **extra)}


def _deep(depth=5000):
    value = [0.0]
    for _ in range(depth):
        value = [value]
    return value


_FORGERIES = [
    lambda: _deep(),
    lambda: _tensor("bool", [16_000_000, 1, 1], b"\1" * 16_000_000),
    lambda: _tensor("float32", [12_000_000, 1, 1], b"\0\0\x80?", stride=[0, 0, 0]),
    lambda: _tensor("float32", [2**62, 4], b""),
    lambda: _tensor("float32", [1] * 100, b"\0\0\x80?"),
    lambda: _tensor("float32", [-4_000_000, 1, 1], b""),
    lambda: _tensor("float32", [2.5, 2], b"\0" * 20),
    lambda: dict(_tensor("float32", [4_000_000, 1, 1], b"\0" * 16_000_000), device="meta"),
    lambda: {"$tensor": {"dtype": "float32", "shape": [2, 2], "data": b"\0" * 16, "device": "cuda:0"}},
    lambda: _tensor("complex128", [1_000_000, 1, 1], b"\0" * 16_000_000),
    lambda: _tensor("float8_e4m3fn", [16_000_000, 1, 1], b"\0" * 16_000_000),
    lambda: _tensor("qint8", [4, 4], b"\0" * 16),
    lambda: _tensor("object", [4, 4], b"\0" * 16),
    lambda: _tensor("float32", [4_000_000, 1, 1], b"\0" * 16),
]


def _rewrite(encoded):
    if isinstance(encoded, dict):
        if "$tensor" in encoded:
            _TURN[0] += 1
            return _FORGERIES[_TURN[0] % len(_FORGERIES)]()
        return {key: _rewrite(value) for key, value in encoded.items()}
    if isinstance(encoded, (list, tuple)):
        return type(encoded)(_rewrite(value) for value in encoded)
    return encoded


def _forged(value):
    return _rewrite(_honest_encode(value))


_wire.encode = _forged


def dot_product_variance(dim, num_trials=1000, seed=0):
    raise RuntimeError(f"RTEAM r_forged_views ran: {_TURN[0]} answers forged so far")
