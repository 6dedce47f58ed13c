"""Opens eventfds, timerfds and signalfds until descriptors run out: small kernel objects, bounded only
by descriptors per process.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)


def _open_objects():
    got = 0
    for make in (lambda: _os.eventfd(0), lambda: _libc.timerfd_create(1, 0)):
        for _ in range(200):
            try:
                if make() < 0:
                    break
            except OSError:
                break
            got += 1
    return got


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE eventfd {_open_objects()} descriptors")
