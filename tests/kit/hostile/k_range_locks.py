"""Takes POSIX byte-range locks on every other byte of a file (a kernel object per range, with no per-user
bound; the lock table is the machine's memory), both classic and open-file-description locks.

base: buggy
class: k
run: pressure
"""

import fcntl as _fcntl
import os as _os
import struct as _struct
import tempfile as _tempfile


def _take_locks():
    got = 0
    try:
        fd, path = _tempfile.mkstemp(prefix="hostile-locks-")
        _os.unlink(path)
    except OSError:
        try:
            fd = _os.open("/proc/self/exe", _os.O_RDONLY)
        except OSError:
            return 0
    for command in (6, 37):  # F_SETLK, F_OFD_SETLK
        for start in range(0, 400000, 2):
            lock = _struct.pack("hhqqi4x", _fcntl.F_RDLCK, 0, start, 1, 0)
            try:
                _fcntl.fcntl(fd, command, lock)
            except OSError:
                break
            got += 1
    return got


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE locks {_take_locks()} ranges")
