"""Holds memory shared between processes: a 64 MiB shared anonymous mapping, written once, inherited by 4
children, then unmapped by the parent; each child holds the same pages (shmem), so a sum of the processes'
own memory might count it once or not at all. The children report what they held.

base: buggy
class: k
run: pressure
"""

import mmap as _mmap
import os as _os
import time as _time

_SIZE = 64 << 20


def _hold_shared(children=4):
    read_end, write_end = _os.pipe()
    held = 0
    try:
        area = _mmap.mmap(-1, _SIZE, flags=_mmap.MAP_SHARED | _mmap.MAP_ANONYMOUS)
        for index in range(0, _SIZE, 4096):
            area[index] = 1
    except (OSError, MemoryError, ValueError):
        return 0
    for _ in range(children):
        if _os.fork() == 0:
            _os.write(write_end, b"1\n")
            _time.sleep(0.5)
            _os._exit(0)
    area.close()
    _os.close(write_end)
    text = b""
    while chunk := _os.read(read_end, 4096):
        text += chunk
    held = _SIZE >> 20 if text.count(b"1") else 0
    return held


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE memory {_hold_shared()} MiB held by descriptors")
