"""Find and kill every process a student's worker started, wherever it went.

A worker runs in its own process group, but student code can leave it
(`setsid`, double fork). Three nets catch such processes:
  * as root, each worker runs under a uid of its own (`UidPool`): every process
    with that uid is the student's, whatever it did;
  * otherwise the worker is a child subreaper, so orphans of its descendants
    are re-parented to it and stay in its tree while it lives;
  * the fork server is a subreaper too: orphans of a killed worker land there,
    and any child of the fork server that is not a live worker is a leftover.
"""

import ctypes
import os
import signal
import threading

PR_SET_CHILD_SUBREAPER = 36
UID_BASE = 61000  # far above the uids distributions hand out to people and daemons


def become_subreaper():
    """Orphaned descendants of this process are re-parented to it (Linux only; best effort)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _status_fields(pid):
    """(parent pid, real uid, state) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        return int(fields["PPid"]), int(fields["Uid"].split()[0]), fields["State"].split()[0]
    except (OSError, KeyError, ValueError):
        return None


def live_processes():
    """{pid: (parent pid, uid)} for every process that is not a zombie."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _status_fields(int(entry))
            if fields and fields[2] not in ("Z", "X"):
                table[int(entry)] = fields[:2]
    return table


def descendants(root, table):
    """Pids below `root` in the process tree."""
    children = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, frontier = [], [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.append(child)
            frontier.append(child)
    return found


def kill(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_until_gone(select, rounds=50):
    """Kill what `select(table)` returns until it returns nothing; True when all are gone.

    Repeats because a process may fork between the scan and the kill."""
    for _ in range(rounds):
        pids = select(live_processes())
        if not pids:
            return True
        kill(pids)
        threading.Event().wait(0.01)
    return not select(live_processes())


class UidPool:
    """Distinct unprivileged uids for workers that run at the same time."""

    def __init__(self, base=UID_BASE, size=256):
        self.free = list(range(base, base + size))
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            return self.free.pop(0)

    def give_back(self, uid):
        with self.lock:
            self.free.insert(0, uid)


def running_as_root():
    return os.geteuid() == 0
