"""Red team (issue 26, memory outside the caps): shmem pages that neither RLIMIT_FSIZE nor the address
space sees. fallocate(FALLOC_FL_KEEP_SIZE) gives a memfd (and a file in /dev/shm or /tmp, where one can be
made) its pages while its size stays 0, so the file-size limit never applies and nothing is mapped.
8 children take 96 MiB each this way, report what they hold (st_blocks), then hold it, trying to outlive
the step; the files in /dev/shm and /tmp (basic mode) are left behind, holding their pages.

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
_libc.fallocate.argtypes = [_ctypes.c_int, _ctypes.c_int, _ctypes.c_long, _ctypes.c_long]
_MiB = 1 << 20


def _grow(fd, most):
    for chunk in range(most // (8 * _MiB)):
        if _time.monotonic() > _DEADLINE[0] - 0.4:
            break
        if _libc.fallocate(fd, 1, chunk * 8 * _MiB, 8 * _MiB) != 0:  # FALLOC_FL_KEEP_SIZE
            break
    return _os.fstat(fd).st_blocks * 512


def _child(index, write_end):
    held = 0
    try:
        fd = _libc.memfd_create(b"hostile-rteam", 0)
        if fd >= 0:
            held += _grow(fd, 64 * _MiB)
        for place in ("/dev/shm", "/tmp"):
            try:
                other = _os.open(f"{place}/.hostile-rteam-@TOKEN@-{index}", _os.O_RDWR | _os.O_CREAT, 0o600)
                held += _grow(other, 16 * _MiB)
            except OSError:
                pass
    finally:
        _os.write(write_end, f"{held >> 20}\n".encode())
        _os.close(write_end)
    _os.setsid()
    _time.sleep(60)


def _hold(children=8):
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
    raise RuntimeError(f"RTEAM r_memfd_fallocate ran: ALLOWANCE memory {_hold()} MiB held by fallocated shmem")
