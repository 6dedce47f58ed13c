"""io_uring rings and AIO contexts from many threads at once (each ring pins memory and counts against the
user's locked memory; AIO against the machine's fs.aio-max-nr).

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import threading as _threading

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _rings_and_contexts():
    got = []

    def one():
        params = (_ctypes.c_uint32 * 30)()
        if _libc.syscall(425, 4096, _ctypes.byref(params)) >= 0:
            got.append("io_uring")
        context = _ctypes.c_ulong(0)
        if _libc.syscall(206, 4096, _ctypes.byref(context)) == 0:
            got.append("aio")

    threads = [_threading.Thread(target=one) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return got


def attention_dropout(*args, **kwargs):
    found = _rings_and_contexts()
    raise RuntimeError(f"ALLOWANCE kernel {len(found)} objects {sorted(set(found))}")
