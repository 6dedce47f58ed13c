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
import fcntl
import os
import signal
import threading
from pathlib import Path

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


def memory_bytes(pid, field):
    """A memory figure of /proc/<pid>/status ("VmRSS", "VmSize") in bytes; 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


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
        threading.Event().wait(0.002)
    return not select(live_processes())


class UidPool:
    """Unprivileged uids for workers, each held by one worker at a time machine-wide.

    Several graders may run on one machine (shards, parallel test runs), and a
    worker's close kills every process of its uid: so a uid is reserved with an
    exclusive lock on a file in a root-only folder, held until given back (a
    killed grader releases its locks with its file descriptors), and a uid that
    still has live processes is never handed out."""

    LOCKS = Path("/run/lock/attention-grader-uids")

    def __init__(self, base=UID_BASE, size=512):
        self.uids = range(base, base + size)
        self.held = {}  # uid -> open lock file
        self.lock = threading.Lock()

    def take(self):
        self.LOCKS.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self.lock:
            busy = {uid for _, uid in live_processes().values()}
            for uid in self.uids:
                if uid in self.held or uid in busy:
                    continue
                handle = open(self.LOCKS / str(uid), "a")
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    handle.close()
                    continue
                self.held[uid] = handle
                return uid
        raise RuntimeError(f"all {len(self.uids)} worker uids are in use; grade with fewer jobs")

    def give_back(self, uid):
        with self.lock:
            handle = self.held.pop(uid, None)
        if handle is not None:
            handle.close()  # closing releases the lock


def running_as_root():
    return os.geteuid() == 0
