"""Creates POSIX timers until the kernel refuses (each holds a signal queue entry charged to the uid's
RLIMIT_SIGPENDING allowance, shared with the instructor under one uid), in 4 children.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import time as _time

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _grab_timers(children=4):
    read_end, write_end = _os.pipe()
    for _ in range(children):
        if _os.fork() == 0:
            got = 0
            for _ in range(5000):
                timer = _ctypes.c_int(0)
                if _libc.syscall(222, 1, None, _ctypes.byref(timer)) != 0:  # timer_create(CLOCK_MONOTONIC)
                    break
                got += 1
            _os.write(write_end, f"{got}\n".encode())
            _time.sleep(1.0)
            _os._exit(0)
    _os.close(write_end)
    text = b""
    while chunk := _os.read(read_end, 4096):
        text += chunk
    return sum(int(line) for line in text.split() if line.isdigit())


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE signals {_grab_timers()} timers")
