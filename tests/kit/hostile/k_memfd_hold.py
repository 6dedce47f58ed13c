"""Holds memory nobody maps: 6 children each fill memfds (1 MiB each, the file-size limit, as many as
descriptors allow) and keep only the descriptors, so that neither the address-space limit nor the resident
memory of any process shows it; together they report how much they held at once.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import time as _time

_libc = _ctypes.CDLL(None, use_errno=True)
_MiB = 1 << 20


def _hold_memfds(children=6):
    read_end, write_end = _os.pipe()
    for _ in range(children):
        if _os.fork() == 0:
            held = 0
            try:
                for _ in range(120):
                    fd = _libc.memfd_create(b"hostile", 0)
                    if fd < 0:
                        break
                    try:
                        _os.write(fd, b"\1" * _MiB)
                    except OSError:
                        break
                    held += 1
            finally:
                _os.write(write_end, f"{held}\n".encode())
            _time.sleep(2.0)
            _os._exit(0)
    _os.close(write_end)
    text = b""
    while chunk := _os.read(read_end, 4096):
        text += chunk
    return sum(int(line) for line in text.split() if line.isdigit())


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE memory {_hold_memfds()} MiB held by descriptors")
