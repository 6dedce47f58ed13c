"""Makes the judge spend its time decoding: answers with hundreds of thousands of values, ten
thousand empty tensors, and megabytes of escaped surrogates, all cheap for the worker to send.

base: buggy
class: 6
run: main
"""

import grader.check.wire as _wire

_calls = []


def _forged(value):
    _calls.append(1)
    kind = len(_calls) % 3
    if kind == 0:
        return [[0] * 1000 for _ in range(1000)]
    if kind == 1:
        empty = {"$tensor": {"dtype": "float32", "shape": [0], "data": b"", "device": "cpu"}}
        return [dict(empty) for _ in range(10000)]
    return ["\ud800" * 1000 for _ in range(3000)]


_wire.encode = _forged
