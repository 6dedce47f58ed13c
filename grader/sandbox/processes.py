"""Find and kill every process a student's worker started, wherever it went; sweep what it left.

In a sealed worker (see `seal`) everything the student starts lives in the
sandbox's PID namespace and dies with it (and with its cgroup). The nets below
hold without namespaces too, where student code can leave its process group
(`setsid`, double fork):
  * as root, each worker runs under a uid of its own (`UidPool`): every process
    with that uid is the student's, whatever it did;
  * otherwise the worker is a child subreaper, so orphans of its descendants
    are re-parented to it and stay in its tree while it lives;
  * the fork server is a subreaper too: orphans of a killed worker land there,
    and any child of the fork server that is not a live worker is a leftover.
Without a private /tmp, a private uid can leave folders, links and SysV IPC
objects behind: `sweep_uid` removes them before the uid is handed out again.
"""

import ctypes
import fcntl
import itertools
import os
import signal
import stat
import threading
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
UID_BASE = 61000  # far above the uids distributions hand out to people and daemons


def become_subreaper():
    """Orphaned descendants of this process are re-parented to it (Linux only; best effort)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


MADV_COLLAPSE = 25  # Linux 6.1+
HUGE_PAGE = 2 << 20


def collapse_to_huge_pages():
    """Back this process's writable anonymous memory (the heap torch's import filled) with huge pages,
    where the kernel can: a fork then copies one entry per 2 MB instead of 512, and a worker's fork and
    exit cost half as much (measured on a torch process: 7.6 ms -> 3.5 ms per fork and exit). A page a
    child writes is still copied 4 KB at a time (the kernel splits a shared huge page first).
    Best effort: the bytes collapsed (0 on kernels without MADV_COLLAPSE, or off Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as maps:
            regions = [line.split() for line in maps]
    except (OSError, AttributeError):
        return 0
    collapsed = 0
    for fields in regions:
        start, end = (int(part, 16) for part in fields[0].split("-"))
        name = fields[5] if len(fields) > 5 else ""
        if fields[4] != "0" or "w" not in fields[1] or name not in ("", "[heap]"):
            continue  # files, stacks, read-only memory: not what a fork copies page by page
        first, last = -(-start // HUGE_PAGE) * HUGE_PAGE, end // HUGE_PAGE * HUGE_PAGE
        if last > first and libc.madvise(first, last - first, MADV_COLLAPSE) == 0:
            collapsed += last - first
    return collapsed


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


def children(pid):
    """Direct children of a live process (from every one of its threads), without reading all of /proc."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                found.extend(int(child) for child in listing.read().split())
        except (OSError, ValueError):
            pass
    return found


def subtree(pid):
    """`pid` and every live process below it (a sandbox's PID 1 holds all of its namespace)."""
    found, frontier = [], [pid]
    while frontier and len(found) < 4096:
        current = frontier.pop()
        found.append(current)
        frontier.extend(children(current))
    return found


def resident_growth(pids, baseline):
    """Memory a group of forked processes added: each one's resident set beyond the warm image
    (`baseline`, which every fork shares with the fork server until it writes to it)."""
    return sum(max(0, memory_bytes(pid, "VmRSS") - baseline) for pid in pids)


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pids, reaped=False):
    """User + system CPU seconds the live processes `pids` have used so far; with `reaped`, also those of the
    processes they have reaped (cutime and cstime: each exited process is counted once, in the live ancestor that
    waited for it, a sandbox's PID 1 at the latest)."""
    fields_used = slice(11, 15 if reaped else 13)
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat_file:
                fields = stat_file.read().rsplit(")", 1)[1].split()
            total += sum(int(field) for field in fields[fields_used])
        except (OSError, IndexError, ValueError):
            pass
    return total / _TICKS


def cpu_wait_seconds(pids):
    """Seconds the threads of the live processes `pids` have spent ready to run but waiting for a CPU that
    others held (the second field of /proc/<pid>/task/<tid>/schedstat, in ns; 0 where the kernel has no
    schedstat). A busy machine's cost, not the submission's: a step's time limit does not count it."""
    total = 0
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for thread in threads:
            try:
                with open(f"/proc/{pid}/task/{thread}/schedstat") as schedstat:
                    total += int(schedstat.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return total / 1e9


def own_cpu_wait_seconds():
    """The calling thread's wait for a CPU (as cpu_wait_seconds): a judge starved on a busy machine reads its
    worker's answers late, and that is not the submission's time either."""
    try:
        with open("/proc/thread-self/schedstat") as schedstat:
            return int(schedstat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


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
    RESCAN_SECONDS = 1.0

    def __init__(self, base=UID_BASE, size=512):
        self.uids = range(base, base + size)
        self.held = {}  # uid -> open lock file
        self.lock = threading.Lock()
        self._busy, self._busy_at = set(), None

    def _busy_uids(self):
        """Uids with live processes that are not this pool's own (it kills those itself before giving
        them back). Scanning /proc costs milliseconds: a scan serves the takes of the next second."""
        now = time.monotonic()
        if self._busy_at is None or now - self._busy_at > self.RESCAN_SECONDS:
            self._busy = {uid for _, uid in live_processes().values() if uid in self.uids} - set(self.held)
            self._busy_at = now
        return self._busy

    def take(self):
        """A uid no worker of any grader on this machine holds. Where other runs hold them all (a test suite's
        hostile battery, shards side by side), it waits for one: each is given back when its worker ends."""
        self.LOCKS.mkdir(mode=0o700, parents=True, exist_ok=True)
        began = time.monotonic()
        while True:
            uid = self._take_free()
            if uid is not None:
                return uid
            if time.monotonic() - began > self.WAIT_SECONDS:
                raise RuntimeError(
                    f"all {len(self.uids)} worker uids ({self.uids[0]}-{self.uids[-1]}) stayed held for "
                    f"{self.WAIT_SECONDS:g} s, {len(self.held)} of them by this run: other grading runs on this "
                    "machine, or processes they left, hold the rest; let them finish (or stop them) and run the "
                    "same command again")
            time.sleep(0.5)
            self._busy_at = None  # scan again: a uid may have been given back meanwhile

    WAIT_SECONDS = 300.0

    def _take_free(self):
        with self.lock:
            busy = self._busy_uids()
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
        return None

    def forget_after_fork(self):
        """In a forked child: the parent's uids stay the parent's. The child's copies of their lock files
        are closed (the lock belongs to the open file, which the parent still holds), so a uid the parent
        gives back is free at once, not only when the child exits."""
        self.lock = threading.Lock()
        for handle in self.held.values():
            try:
                handle.close()
            except OSError:
                pass
        self.held = {}

    def give_back(self, uid):
        with self.lock:
            handle = self.held.pop(uid, None)
        if handle is not None:
            handle.close()  # closing releases the lock

    def sweep_unused(self):
        """Remove what any of the pool's uids left behind (an older grader, a run killed midway), for
        every uid no grader holds now and no process runs as; once per run, as root."""
        self.LOCKS.mkdir(mode=0o700, parents=True, exist_ok=True)
        busy = {uid for _, uid in live_processes().values()}
        handles, free = [], set()
        try:
            with self.lock:
                for uid in self.uids:
                    if uid in self.held or uid in busy:
                        continue
                    handle = open(self.LOCKS / str(uid), "a")
                    try:
                        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except OSError:
                        handle.close()
                        continue
                    handles.append(handle)
                    free.add(uid)
                sweep_uid(free)
        finally:
            for handle in handles:
                handle.close()


# Places any uid may write to on a Debian machine (sticky, world-writable).
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock")
# /proc/sysvipc/<kind>: columns of the owner's and the creator's uid (an owner may give an object away)
_IPC = {"shm": ("shmctl", (7, 9)), "msg": ("msgctl", (7, 9)), "sem": ("semctl", (4, 6))}
IPC_RMID = 0


def sweep_uid(uid, folders=SHARED_FOLDERS):
    """Remove what `uid` (or each of a set of uids) left in the shared folders (files, folders, links:
    a worker without a private /tmp can still make those) and its SysV shared memory, queues and
    semaphores."""
    uids = {uid} if isinstance(uid, int) else set(uid)
    if not uids:
        return
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid not in uids:
                continue
            remove_tree(entry.path)
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, (call, columns) in _IPC.items():
        try:
            rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if any(len(fields) > column and fields[column].isdigit() and int(fields[column]) in uids
                   for column in columns):
                if kind == "sem":
                    libc.semctl(int(fields[1]), 0, IPC_RMID)
                else:
                    getattr(libc, call)(int(fields[1]), IPC_RMID, None)


def remove_tree(path, budget=2_000_000):
    """Remove `path` (a file, a link or a folder and all it holds) without following any link and without
    recursion, in at most `budget` steps; True when it is gone. Never raises: what a student left (a chain of
    5000 nested folders, a million entries) must never stop grading, this run's or a later one's. It walks
    with one folder descriptor at a time, down by name and up through "..", so neither the depth nor the
    length of the path matters."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), flags)
    except OSError:
        return False
    levels = [[os.path.basename(path)]]  # per level walked into: the names still to remove there
    walked = []  # the name of each folder walked into, in the folder above it
    try:
        while budget > 0:
            budget -= 1
            if not levels[-1]:
                if not walked:
                    return True
                with os.scandir(fd) as entries:  # a folder listed in parts, or refilled meanwhile
                    levels[-1] = [entry.name for entry in itertools.islice(entries, 65536)]
                if levels[-1]:
                    continue
                levels.pop()
                parent = os.open("..", flags, dir_fd=fd)
                os.close(fd)
                fd = parent
                os.rmdir(walked.pop(), dir_fd=fd)
                continue
            name = levels[-1].pop()
            try:
                if not stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=fd)
                    continue
                child = os.open(name, flags | os.O_NOFOLLOW, dir_fd=fd)  # emptied first, removed on the way up
            except FileNotFoundError:
                continue
            os.close(fd)
            fd = child
            walked.append(name)
            levels.append([])
        return False
    except Exception:  # noqa: BLE001 - a leftover, however odd, costs a message at most, never the run
        return False
    finally:
        os.close(fd)


def running_as_root():
    return os.geteuid() == 0
