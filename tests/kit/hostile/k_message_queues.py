"""Fills POSIX message queues (per user: RLIMIT_MSGQUEUE, and fs.mqueue.queues_max for the machine).

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _fill_queues():
    got = 0
    for index in range(256):
        name = f"hostile-{_os.getpid()}-{index}".encode()
        queue = _libc.syscall(240, name, _os.O_CREAT | _os.O_RDWR, 0o600, None)  # mq_open
        if queue < 0:
            break
        for _ in range(10):
            if _libc.syscall(242, int(queue), b"x" * 8192, 8192, 0, None) != 0:  # mq_timedsend
                break
            got += 8192
    return got


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE mqueue {_fill_queues()} bytes")
