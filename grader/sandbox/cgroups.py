"""One submission's control groups: memory, process count and CPU counted by the kernel.

The judge creates the groups (`Cgroup.create`) below its own cgroup (so a submission can
never escape the limits the grader's host put on the grader) and the worker joins them
itself, first thing, while it is still privileged. Memory counts what the kernel counts
(anonymous memory, tmpfs and shared memory, page cache, TCP buffers on v1; also socket
buffers on v2), processes count threads too, and the CPU group caps a submission at one
core and gives it one share of the machine, however many processes it starts. cgroup v2
is used where it holds the controller, v1 otherwise (the v1 `memory`, `pids` and `cpu`
hierarchies of Debian 12 and of this VM). Where nothing is writable (an ordinary user
without a delegated cgroup, most containers) `create` returns None and the sandbox
falls back to rlimits and the judge's watchdog.
"""

import os
import signal
import threading
import time
from pathlib import Path

PREFIX = "attention-grader"
CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


def _write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, str(text).encode())
    finally:
        os.close(fd)


def _own_cgroups():
    """{controller, or '' for v2: this process's path in that hierarchy}."""
    found = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path
    return found


def _mounts():
    """{'' for the cgroup2 mount, or a v1 controller: its mount point}."""
    found = {}
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, point, fstype, options, *_ = line.split()
        if fstype == "cgroup2":
            found.setdefault("", point)
        elif fstype == "cgroup":
            for option in options.split(","):
                if option in CONTROLLERS:
                    found.setdefault(option, point)
    return found


def _bases():
    """{key: Path of this process's own group} for v2 ('') and each v1 controller mounted."""
    mounts, own = _mounts(), _own_cgroups()
    return {key: Path(point) / own[key].lstrip("/") for key, point in mounts.items() if key in own}


def _v2_controllers(base):
    try:
        return set((base / "cgroup.controllers").read_text().split())
    except (OSError, TypeError):
        return set()


def sweep_stale():
    """Remove the empty groups of graders that are gone (a judge ends without exit handlers)."""
    bases = _bases()
    _sweep_stale([base / PREFIX for base in bases.values()])


def _sweep_stale(folders):
    """Remove empty groups left by graders that died (their name starts with the creator's pid)."""
    for folder in folders:
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            creator = entry.name.split("-", 1)[0]
            if entry.is_dir() and creator.isdigit() and not os.path.exists(f"/proc/{creator}"):
                try:
                    entry.rmdir()
                except OSError:
                    pass


class Groups:
    """Where one grading process makes its submissions' groups: names unique on the machine (the creator's
    pid, then a count) and, once, the sweep of what dead graders left. Owned by the process's worker pool
    (a forked judge makes a pool, and so a Groups, of its own: no lock is inherited from a parent's thread)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._count = 0
        self._swept = False

    def create(self, memory_bytes, pids, cpus=1.0):
        """New groups with these limits (a Cgroup), or None where no controller can be used."""
        bases = _bases()
        v2 = bases.pop("", None)
        with self._lock:
            self._count += 1
            name = f"{os.getpid()}-{self._count}"
            if not self._swept:
                self._swept = True
                _sweep_stale([base / PREFIX for base in [*bases.values(), v2] if base is not None])
        return Cgroup.create(name, bases, v2, memory_bytes, pids, cpus)


def counts(cgroup, controller):
    """Whether a submission's groups (a Cgroup, or None where it has none) hold it to `controller`'s limit
    ("memory", "cpu", "pids"): where not, rlimits and the judge's watchdog stand in."""
    return cgroup is not None and controller in cgroup.limits


class Cgroup:
    """The groups of one submission: {key: folder}, and the limits that were applied."""

    def __init__(self, dirs, limits):
        self.dirs = dirs
        self.limits = limits

    @classmethod
    def create(cls, name, bases, v2, memory_bytes, pids, cpus):
        """New groups `name` below `bases` (v1, by controller) and `v2`, or None where no controller can be
        used (see Groups.create)."""
        available = _v2_controllers(v2)
        dirs, limits = {}, {}
        want = {"memory": {}, "pids": {}, "cpu": {}}
        if memory_bytes:
            want["memory"] = {"v2": [("memory.max", memory_bytes), ("memory.swap.max", 0)],
                              "v1": [("memory.limit_in_bytes", memory_bytes),
                                     ("memory.memsw.limit_in_bytes", memory_bytes),
                                     ("memory.kmem.tcp.limit_in_bytes", min(memory_bytes, 64 << 20))]}
        if pids:
            want["pids"] = {"v2": [("pids.max", pids)], "v1": [("pids.max", pids)]}
        if cpus:
            quota = int(cpus * CPU_PERIOD_US)
            want["cpu"] = {"v2": [("cpu.max", f"{quota} {CPU_PERIOD_US}")],
                           "v1": [("cpu.cfs_period_us", CPU_PERIOD_US), ("cpu.cfs_quota_us", quota)]}
        v2_used = [key for key in CONTROLLERS if want[key] and key in available]
        if v2 is not None and v2_used:
            folder = _make(v2 / PREFIX, name, enable=v2_used)
            if folder is not None:
                dirs[""] = folder
                for key in v2_used:
                    if _apply(folder, want[key]["v2"]):
                        limits[key] = "v2"
        for key in CONTROLLERS:
            if not want[key] or key in limits or key not in bases:
                continue
            folder = _make(bases[key] / PREFIX, name)
            if folder is None:
                continue
            if _apply(folder, want[key]["v1"]):
                dirs[key] = folder
                limits[key] = "v1"
            else:
                _remove(folder)
        return cls(dirs, limits) if limits else None

    def join(self):
        """Called by the worker itself, before it drops its privileges: every group it uses."""
        for folder in self.dirs.values():
            _write(folder / "cgroup.procs", "0")

    def pids(self):
        found = set()
        for folder in self.dirs.values():
            try:
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return found

    def _read(self, key, v2_name, v1_name):
        folder = self.dirs.get("") if self.limits.get(key) == "v2" else self.dirs.get(key)
        if folder is None:
            return None
        try:
            return (folder / (v2_name if self.limits.get(key) == "v2" else v1_name)).read_text()
        except OSError:
            return None

    def oom_kills(self):
        """How many of the submission's processes the kernel killed for memory."""
        text = self._read("memory", "memory.events", "memory.oom_control") or ""
        fields = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        return int(fields.get("oom_kill", 0))

    def kill(self, timeout=2.0):
        """SIGKILL every process in the groups; True once all are gone."""
        v2 = self.dirs.get("")
        if v2 is not None and (v2 / "cgroup.kill").exists():
            try:
                _write(v2 / "cgroup.kill", 1)  # atomic: a fork cannot race it
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        while (left := self.pids()) and time.monotonic() < deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.002)
        return not self.pids()

    def remove(self):
        for folder in self.dirs.values():
            _remove(folder)


def _make(parent, name, enable=()):
    try:
        parent.mkdir(exist_ok=True)
        for key in enable:  # v2: a group's controllers must be enabled in its parent
            try:
                _write(parent / "cgroup.subtree_control", f"+{key}")
            except OSError:
                pass
        folder = parent / name
        folder.mkdir()
        return folder
    except OSError:
        return None


def _apply(folder, settings):
    """Write the settings in order; True when the first (the limit itself) held."""
    for index, (name, value) in enumerate(settings):
        try:
            _write(folder / name, value)
        except OSError:
            if index == 0:
                return False
    return True


def _remove(folder):
    for _ in range(200):  # rmdir fails while dying processes are still charged to the group
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.005)
