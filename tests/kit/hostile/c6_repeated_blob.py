"""Makes the judge allocate far more than the worker sends: its answers (forged by patching the
grader's own encoder inside the worker) name one 1 MiB blob two thousand times, or overlapping
slices of it; a judge that copies each reference holds 2 GiB.

base: buggy
class: 6
run: main
"""

import grader.check.wire as _wire

_honest_encode = _wire.encode
_MiB = 1 << 20


def _forged(value):
    first = {"$tensor": {"dtype": "uint8", "shape": [_MiB], "data": b"\1" * _MiB, "device": "cpu"}}
    repeated = [{"$tensor": {"dtype": "uint8", "shape": [_MiB], "data": {"$blob": [0, _MiB]}, "device": "cpu"}}
                for _ in range(2000)]
    overlapping = [{"$tensor": {"dtype": "uint8", "shape": [_MiB // 2], "data": {"$blob": [index, _MiB // 2]},
                                "device": "cpu"}} for index in range(2000)]
    return [first, repeated if isinstance(value, tuple) else overlapping]


_wire.encode = _forged
