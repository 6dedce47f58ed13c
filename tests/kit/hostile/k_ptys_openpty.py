"""Asks for pseudo-terminal pairs through os.openpty (posix_openpt, grantpt) until refused.

base: buggy
class: k
run: pressure
"""

import os as _os


def _open_ptys():
    got = 0
    for _ in range(60):
        try:
            _os.openpty()
        except OSError:
            break
        got += 1
    return got


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE ptys {_open_ptys()} terminals")
