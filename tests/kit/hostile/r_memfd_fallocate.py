"""Red team (issue 26, memory outside the caps): shmem pages that neither RLIMIT_FSIZE nor the address
space sees. fallocate(FALLOC_FL_KEEP_SIZE) gives a memfd (and a file in /dev/shm or /tmp, where one can be
made) its pages while its size stays 0, so the file-size limit never applies and nothing is mapped.
10 children take 96 MiB each this way, report what they hold (st_blocks), then hold it, trying to outlive
the step; the files in /dev/shm and /tmp (basic mode) are left behind, holding their pages.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import time as _time

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [_ctypes.c_int, _ctypes.c_int, _ctypes.c_long, _ctypes.c_long]
_MiB = 1 << 20


def _grow(fd, most):
    for chunk in range(most // (8 * _MiB)):
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


def _hold(children=10):
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
    raise RuntimeError(f"RTEAM r_memfd_fallocate ran: ALLOWANCE memory {_hold()} MiB held by fallocated shmem")
