"""Spreads AIO contexts over child processes (each asks for 4096 events at a time), so that no one
process holds much while together they take the machine's fs.aio-max-nr; the children report their count.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import time as _time

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _children_grab(children=8):
    read_end, write_end = _os.pipe()
    for _ in range(children):
        if _os.fork() == 0:
            got = 0
            for _ in range(32):
                context = _ctypes.c_ulong(0)
                if _libc.syscall(206, 4096, _ctypes.byref(context)) != 0:
                    break
                got += 4096
            _os.write(write_end, f"{got}\n".encode())
            _time.sleep(1.0)
            _os._exit(0)
    _os.close(write_end)
    total, text = 0, b""
    while chunk := _os.read(read_end, 4096):
        text += chunk
    total = sum(int(line) for line in text.split() if line.isdigit())
    return total


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE aio {_children_grab()} events")
