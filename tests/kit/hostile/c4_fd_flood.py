"""Floods every inherited pipe (the resource tracker prints a traceback for each bad line) from a
thread that keeps going while its steps are graded.

base: buggy
class: 4
run: disruptive
"""

import os as _os
import stat as _stat
import threading as _threading


def _flood():
    junk = b"garbage:" * 64 + b"\n"
    targets = []
    for name in _os.listdir("/proc/self/fd"):
        try:
            if int(name) > 2 and _stat.S_ISFIFO(_os.fstat(int(name)).st_mode):
                targets.append(int(name))
        except (OSError, ValueError):
            continue
    for _ in range(2000):  # 1 MB a pipe, about 2000 bad lines
        for fd in targets:
            try:
                _os.write(fd, junk)
            except OSError:
                pass


class _AtLoad:
    _threading.Thread(target=_flood, daemon=True).start()
