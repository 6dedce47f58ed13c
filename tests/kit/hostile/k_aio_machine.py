"""Takes the machine's whole AIO allowance (fs.aio-nr against fs.aio-max-nr, shared by every program on the
host): one io_setup asking for all of it, then as many more as the kernel gives; every other program on the
machine gets EAGAIN from io_setup while they are held.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import time as _time

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _grab_aio():
    got = 0
    for events in (65536, 32768, 8192, 1024, 128):
        for _ in range(64):
            context = _ctypes.c_ulong(0)
            if _libc.syscall(206, events, _ctypes.byref(context)) != 0:  # io_setup
                break
            got += events
    _time.sleep(1.0)
    return got


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE aio {_grab_aio()} events")
