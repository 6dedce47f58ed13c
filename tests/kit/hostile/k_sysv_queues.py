"""Fills SysV message queues (kernel.msgmni queues of kernel.msgmnb bytes each: the machine's, or its IPC
namespace's).

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _fill_sysv():
    got = 0
    message = (_ctypes.c_char * (8 + 4096))()
    message[0] = b"\1"
    for _ in range(64):
        queue = _libc.syscall(68, 0, 0o1600, 0)  # msgget(IPC_PRIVATE, IPC_CREAT | 0600)
        if queue < 0:
            break
        for _ in range(64):
            if _libc.syscall(69, int(queue), message, 4096, 0o4000) != 0:  # msgsnd(..., IPC_NOWAIT)
                break
            got += 4096
    return got


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE sysvmsg {_fill_sysv()} bytes")
