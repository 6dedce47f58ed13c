"""Seal a freshly forked worker in an OS sandbox of its own before any student code runs.

`seal(policy)` runs first thing in the worker (single-threaded, forked from the warm
fork server). When it returns, the caller is PID 1 of new PID, mount, IPC, UTS,
network and cgroup namespaces; sees only a read-only view of what a worker needs (the
interpreter, site-packages, a few devices: never the checkout, the tests, the solutions,
other submissions or OUT), a private size-capped tmpfs at /tmp (its working directory)
and its own /proc (the machine's figures masked in it: `_mask_host_figures`); holds no
capability and no descriptor but its connection; has an emptied environment,
no_new_privs and a seccomp filter (`seccomp`). The process that
called `seal` stays outside as a tiny keeper: it waits for the sandbox and exits as it
did, so the judge's pid and exit status keep their meaning, and killing the keeper kills
the sandbox (PDEATHSIG on its PID 1; the kernel then kills the whole PID namespace).

Three ways to get there, tried in this order by `probe` (see docs/sandbox.md):
  * "root": the grader is root (Gradescope): namespaces without a user namespace, built
    with root's own capabilities, then PID 1 becomes the worker's private uid (which drops
    every capability);
  * "userns": an ordinary user (or root without CAP_SYS_ADMIN): the same inside a new user
    namespace, where the worker is uid 0 without capabilities, mapped to the outer uid;
  * "basic": neither works (no user namespaces, a container without the capabilities):
    closed descriptors, cleared environment, rlimits, a private uid as root, no_new_privs
    and seccomp where they load, and a Landlock ruleset that lets the worker open the view's
    files only (`_confine_to_view`, where the kernel has Landlock). The run says what is off.

Linux only. Python 3.11 has no os.unshare/mount/pivot_root: everything goes through ctypes.
"""

import ctypes
import fcntl
import functools
import os
import resource
import select
import signal
import site
import socket
import stat
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.sandbox import seccomp

_libc = ctypes.CDLL(None, use_errno=True)
LINUX = hasattr(_libc, "prctl") and hasattr(_libc, "unshare")  # elsewhere only the basic mode (without prctl)
if LINUX:
    _libc.syscall.restype = ctypes.c_long
    _libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    _libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    _libc.unshare.argtypes = [ctypes.c_int]

# <linux/sched.h>
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME = 0x10000000, 0x20000000, 0x40000000, 0x00000080
BESIDE_USER = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | CLONE_NEWCGROUP
# <linux/mount.h>
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
# <linux/prctl.h>
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER = 1, 4, 24, 36
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}.get(os.uname().machine)
SIOCSIFFLAGS, IFF_UP = 0x8914, 0x1

MODES = ("root", "userns", "basic")
# What each mode turns on (the names the run summary and results.json use).
ALWAYS = ("closed descriptors", "cleared environment", "rlimits")
NAMESPACES = ("filesystem view", "private /tmp", "pid namespace", "ipc namespace", "network namespace",
              "uts namespace", "cgroup namespace", "no capabilities")
FILTERS = ("no_new_privs", "seccomp")
# What `--require-sandbox` requires.
REQUIRED = NAMESPACES + FILTERS + ALWAYS


class SandboxError(RuntimeError):
    """The sandbox could not be set up; the message says which step failed and why."""


def _check(result, what):
    if result < 0:
        code = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(code)} (errno {code})")
    return result


def _mount(source, target, fstype, flags, data=None):
    encode = lambda text: None if text is None else os.fsencode(text)  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


def _write(path, text, dir_fd=None):
    fd = os.open(path, os.O_WRONLY, dir_fd=dir_fd)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


@dataclass
class Policy:
    keep_fd: int  # the worker's connection: the only descriptor that survives
    mode: str = "basic"
    view: tuple = ()  # host paths shown read-only at the same place (see `view_paths`)
    devices: tuple = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
    uid: "int | None" = None  # root: the private uid the worker becomes
    cgroup: object = None  # a cgroups.Cgroup, joined first
    bpf: bytes = b""  # seccomp.program(); empty: no filter (reported)
    address_space: "int | None" = None  # RLIMIT_AS
    cpu_seconds: int = 60  # RLIMIT_CPU
    processes: int = 64  # RLIMIT_NPROC: per (user namespace, uid), so per submission in every mode but
    # "basic" for an ordinary user (there it counts all the user's processes: see `_process_limit`)
    open_files: int = 128
    pending_signals: int = 64  # RLIMIT_SIGPENDING: the user's allowance of queued signals is not the sandbox's
    file_bytes: int = 1 << 20  # RLIMIT_FSIZE, in the private tmpfs (0 in basic mode: no file of the host)
    tmp_bytes: int = 4 << 20
    tmp_inodes: int = 1024
    env: dict = field(default_factory=lambda: {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
                                               "LANG": "C.UTF-8"})
    hostname: str = "sandbox"
    why: str = ""  # basic mode: why the namespaces are not available (for the report)
    timings: bool = False  # report the time of each stage (stages_ms)
    parent: int = 0  # the fork server's pid, noted by `seal`
    counts_pipes: bool = False  # userns as an ordinary user: the keeper counts the pipes (`_counts_pipes`)
    pipes_keeper: object = None  # the keeper's end of the pipe listener's socket
    pipes_sandbox: object = None  # and PID 1's (`_hand_pipes_to_keeper`)


def view_paths(extra=()):
    """What a worker must see: system libraries, the interpreter's installation and the site-packages
    folders (never the project around a virtual environment), plus `extra`. The grader's own code is
    not shown: the fork server imported every module a worker runs before any fork."""
    wanted = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/localtime",
              sys.base_prefix, *site.getsitepackages(), *extra]
    for name in ("torch", "numpy"):  # where a .pth file put them, if not in the site-packages above
        module = sys.modules.get(name)
        if getattr(module, "__file__", None):
            wanted.append(os.path.dirname(os.path.dirname(module.__file__)))
    # A folder reached through a link (a virtual environment that is itself a link, say) is imported from by
    # that path (sys.path keeps it): the links on the way are shown too, or a module torch imports late (when a
    # tensor is printed) is not found in the worker.
    wanted += [link for path in wanted for link in _links_above(path)]
    chosen = []
    for path in sorted({p if os.path.islink(p) else os.path.realpath(p) for p in wanted if os.path.lexists(p)},
                       key=len):
        if not any(path == c or path.startswith(c.rstrip("/") + "/") for c in chosen if not os.path.islink(c)):
            chosen.append(path)
    return tuple(chosen)


def _links_above(path):
    """The symbolic links among `path`'s folders, outermost first (none for a path free of links)."""
    links, current = [], "/"
    for part in os.path.abspath(path).split("/")[1:]:
        current = os.path.join(current, part)
        if os.path.islink(current):
            links.append(current)
            current = os.path.realpath(current)
    return links


def cuda_devices():
    """Device nodes and driver folders a CUDA worker needs (empty without an NVIDIA driver)."""
    nodes = sorted(str(p) for p in Path("/dev").glob("nvidia*") if not p.is_dir())
    folders = [p for p in ("/usr/local/nvidia", "/usr/local/cuda", "/usr/lib64", "/etc/alternatives")
               if os.path.isdir(p)]
    return tuple(nodes), tuple(folders)


# ------------------------------------------------------------------------------- seal, in the worker

def seal(policy):
    """Seal the calling process (see the module docstring). Returns, in the sealed process only, a
    report: {"mode", "on": [protections], "off": [what degraded, why], "seal_ms": time taken}."""
    # The wall clock: the seal ends inside a time namespace (`_own_clocks`), whose monotonic clock starts near
    # 0 s, so a monotonic reading from before it would give a negative duration.
    started = time.time()
    report = {"mode": policy.mode, "on": [], "off": []}
    policy.parent = os.getppid()
    policy.counts_pipes = _counts_pipes(policy)  # before a user namespace makes this process uid 0
    if policy.mode != "basic":
        _cap_last_cap()
    if policy.timings:
        _STAGES.update(start=started, marks={})
    _close_descriptors(policy.keep_fd)
    os.environ.clear()  # unsetenv too: the C environment is emptied as well
    os.environ.update(policy.env)
    report["on"] += ["closed descriptors", "cleared environment"]
    if policy.cgroup is not None:
        policy.cgroup.join()  # while still privileged: the group's files are the judge's
        report["on"] += [f"cgroup {key}" for key in sorted(policy.cgroup.limits)]
    _mark("fds, environment, cgroup")
    _set_limits(policy, processes=policy.mode != "userns")
    report["on"].append("rlimits")
    if policy.mode == "root":
        _seal_as_root(policy, report)
    elif policy.mode == "userns":
        _seal_in_user_namespace(policy, report)
    else:
        _seal_basic(policy, report)
    if policy.bpf:
        seccomp.load(policy.bpf, _libc)
        report["on"] += list(FILTERS)
        _hand_pipes_to_keeper(policy, report)
    elif LINUX:
        _check(_libc.prctl(seccomp.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        report["on"].append("no_new_privs")
        report["off"].append("seccomp: libseccomp unavailable")
    else:
        report["off"].append("no_new_privs, seccomp: not Linux")
    report["seal_ms"] = round(1000 * (time.time() - started), 1)
    if policy.timings:
        _mark("seccomp")
        report["stages_ms"] = dict(_STAGES["marks"])
    return report


_STAGES = {}


def _mark(name):
    """With Policy.timings: the milliseconds since `seal` began, after each stage (for bench/)."""
    if _STAGES:
        _STAGES["marks"][name] = round(1000 * (time.time() - _STAGES["start"]), 2)


def _seal_as_root(policy, report):
    if not LINUX:
        raise SandboxError("namespaces need Linux")
    if policy.uid is None:
        raise SandboxError("the root sandbox needs a private uid for the worker")
    proc_self = os.open(f"/proc/{os.getpid()}", os.O_RDONLY | os.O_DIRECTORY)  # resolved before the view
    try:
        _check(_libc.unshare(CLONE_NEWNS), "unshare(mount namespace)")
        _build_view(policy, owner=policy.uid)
        _mark("filesystem view")
        _check(_libc.unshare(BESIDE_USER), "unshare(pid, ipc, uts, net, cgroup namespaces)")
        _own_clocks(proc_self, report)
    finally:
        os.close(proc_self)
    _mark("unshare")
    alive_r = _become_pid1(policy)
    _mark("fork PID 1")
    _private_mounts(cuda=_on_cuda(policy))
    _mark("tmp, proc")
    _network_and_ipc(policy, report, user_namespace=False)
    _mark("network, ipc")
    _drop_capabilities_and_uid(policy.uid)
    _die_with_keeper(alive_r)
    _mark("drop privileges")
    report["on"] += list(NAMESPACES) + ["private uid"]


def _seal_in_user_namespace(policy, report):
    if not LINUX:
        raise SandboxError("namespaces need Linux")
    if os.geteuid() == 0 and policy.uid is not None:  # root without CAP_SYS_ADMIN: the private uid first
        _become(policy.uid)
        _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # else /proc/self/uid_map stays root's
        report["on"].append("private uid")
    outer_uid, outer_gid = os.getuid(), os.getgid()
    proc_self = os.open(f"/proc/{os.getpid()}", os.O_RDONLY | os.O_DIRECTORY)  # resolved before the view
    try:
        _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | BESIDE_USER), "unshare(user namespace and others)")
        _write("setgroups", "deny", proc_self)
        _write("uid_map", f"0 {outer_uid} 1", proc_self)
        _write("gid_map", f"0 {outer_gid} 1", proc_self)
        _own_clocks(proc_self, report)
    finally:
        os.close(proc_self)
    # Only now: the namespace's ceiling is the creator's limit at creation, checked against all the
    # user's processes on the machine; set before, a user with many processes could not even fork.
    resource.setrlimit(resource.RLIMIT_NPROC, (policy.processes, policy.processes))
    _mark("unshare")
    _build_view(policy, owner=0)
    _mark("filesystem view")
    alive_r = _become_pid1(policy)
    _mark("fork PID 1")
    _private_mounts(cuda=_on_cuda(policy))
    _mark("tmp, proc")
    _network_and_ipc(policy, report, user_namespace=True)
    _mark("network, ipc")
    _drop_capabilities()
    _die_with_keeper(alive_r)
    _mark("drop privileges")
    report["on"] += list(NAMESPACES) + ["user namespace"]


def _own_clocks(proc_self, report):
    """A time namespace whose monotonic and boot clocks start near 0 s, for PID 1 and all it starts (the
    namespace's first process is forked after this): CLOCK_BOOTTIME, CLOCK_MONOTONIC and the start times in
    /proc no longer tell how long the machine has been up. Durations are unchanged (an offset is a constant).
    Without time namespaces (a kernel before 5.6, or built without them) the report says the uptime shows."""
    if _libc.unshare(CLONE_NEWTIME) < 0:
        report["off"].append(f"time namespace: {os.strerror(ctypes.get_errno())} (the machine's uptime shows)")
        return
    # The kernel refuses an offset that would take a clock below 0: each starts at 1 s.
    offsets = "".join(f"{name} {1 - time.clock_gettime_ns(clock) // 1_000_000_000} 0\n"
                      for name, clock in (("monotonic", time.CLOCK_MONOTONIC), ("boottime", time.CLOCK_BOOTTIME)))
    try:
        _write("timens_offsets", offsets, proc_self)
    except OSError as error:
        report["off"].append(f"time namespace: {error.strerror} (the machine's uptime shows)")
        return
    report["on"].append("time namespace")


def _seal_basic(policy, report):
    os.setsid()
    if LINUX:
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans stay in the worker's tree for the sweep
    os.chdir("/")  # not the checkout: relative paths would name the kit's files (stat needs no Landlock right)
    if os.geteuid() == 0 and policy.uid is not None:
        _become(policy.uid)
        report["on"].append("private uid")
    _die_with(policy.parent)  # after the uid change, which clears it
    if policy.counts_pipes:  # the grading user's own uid: a keeper outside the filter counts its pipes
        alive_r = _fork_keeper(policy)
        if LINUX:
            _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # a fork's child is no subreaper by birth
        _die_with_keeper(alive_r)
    report["off"].append("namespaces: " + (policy.why or "unavailable here"))
    _confine_to_view(policy, report)


# ------------------------------------------------------------------ basic mode: Landlock instead of a view

# <linux/landlock.h>: landlock_create_ruleset, landlock_add_rule, landlock_restrict_self (one number on every
# architecture since 5.13: the unified table).
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION, LANDLOCK_RULE_PATH_BENEATH = 1, 1
LL_EXECUTE, LL_WRITE_FILE, LL_READ_FILE, LL_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
LL_IOCTL_DEV = 1 << 15
LL_SCOPE_ABSTRACT_UNIX_SOCKET, LL_SCOPE_SIGNAL = 1 << 0, 1 << 1
# Every access right each ABI knows (the kernel refuses a right it does not know): v1 13 rights, v2 REFER,
# v3 TRUNCATE, v5 IOCTL_DEV; v4 adds TCP bind/connect, v6 scopes (abstract unix sockets, signals).
_LL_FS_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_LL_NET_RIGHTS = 0b11
_LL_READ_DIR = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR
_LL_FILE_RIGHTS = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | (1 << 14) | LL_IOCTL_DEV  # what a file rule may name


class _LandlockPath(ctypes.Structure):
    _pack_ = 1  # struct landlock_path_beneath_attr is packed
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi():
    """The Landlock ABI this kernel offers (0: none, or refused, e.g. by a container's seccomp profile)."""
    if not LINUX:
        return 0
    version = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _confine_to_view(policy, report):
    """Basic mode: without a mount namespace, Landlock (unprivileged, kernel 5.13+) gives the worker the view it
    would have seen: it reads and runs the view's files (the interpreter, site-packages, system libraries) and
    uses the policy's devices, and opens nothing else: not the class folder and its classmates, the kit's
    checkout, dist/, OUT, earlier runs, /tmp, /proc (other processes' command lines and environments, the
    machine's figures) or /dev/ptmx (the machine's terminals). Where it is missing the run says so (off)."""
    abi = landlock_abi()
    if abi < 1:
        report["off"].append("landlock: unavailable here (kernel older than 5.13, disabled, or refused by a "
                             "container's seccomp profile): the worker's uid may read what it can read on the machine")
        return
    try:
        _landlock_view(policy, abi)
    except (OSError, SandboxError) as error:
        report["off"].append(f"landlock: {error}")
        return
    report["on"].append("landlock view")


def _landlock_view(policy, abi):
    """On CUDA the driver reads /proc (its parameters, the process's maps) and may reach its daemons over
    abstract unix sockets: both stay (untested without a GPU in the basic mode; docs/sandbox.md)."""
    cuda = _on_cuda(policy)
    fs_rights = _LL_FS_RIGHTS[max(level for level in _LL_FS_RIGHTS if level <= abi)]
    scopes = LL_SCOPE_SIGNAL | (0 if cuda else LL_SCOPE_ABSTRACT_UNIX_SOCKET)
    attr = struct.pack("QQQ", fs_rights, _LL_NET_RIGHTS if abi >= 4 else 0, scopes if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    buffer = ctypes.create_string_buffer(attr[:size], size)
    ruleset = _check(_libc.syscall(SYS_LANDLOCK_CREATE_RULESET, buffer, ctypes.c_size_t(size), ctypes.c_uint32(0)),
                     "landlock_create_ruleset")
    try:
        for path in policy.view + (("/proc",) if cuda else ()):
            _landlock_allow(ruleset, path, _LL_READ_DIR, fs_rights)
        for device in policy.devices:  # read, written and (CUDA) driven, never listed around
            _landlock_allow(ruleset, device, LL_READ_FILE | LL_WRITE_FILE | LL_IOCTL_DEV, fs_rights)
        _check(_libc.prctl(seccomp.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _landlock_allow(ruleset, path, rights, known):
    try:
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not on this machine (/lib32, a device): nothing to allow
    try:
        if not stat.S_ISDIR(os.fstat(descriptor).st_mode):
            rights &= _LL_FILE_RIGHTS
        rule = _LandlockPath(rights & known, descriptor)
        _check(_libc.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                             ctypes.byref(rule), ctypes.c_uint32(0)), f"landlock_add_rule {path}")
    finally:
        os.close(descriptor)


def _close_descriptors(keep):
    if keep > 3:
        os.closerange(3, keep)
    os.closerange(max(keep + 1, 3), 1 << 20)  # close_range(2) on Linux
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != keep:
            os.dup2(null, fd)
    if null not in (0, 1, 2, keep):
        os.close(null)
    os.set_inheritable(keep, False)


def _set_limits(policy, processes):
    file_bytes = 0 if policy.mode == "basic" else policy.file_bytes  # basic: no private tmpfs to write to
    limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_NOFILE, policy.open_files),
              (resource.RLIMIT_FSIZE, file_bytes), (resource.RLIMIT_MEMLOCK, 0)]
    if hasattr(resource, "RLIMIT_MSGQUEUE"):  # POSIX message queues: none (Linux)
        limits.append((resource.RLIMIT_MSGQUEUE, 0))
    if hasattr(resource, "RLIMIT_SIGPENDING"):  # queued signals are charged to the user (and its namespaces')
        limits.append((resource.RLIMIT_SIGPENDING, policy.pending_signals))
    if policy.address_space:
        limits.append((resource.RLIMIT_AS, policy.address_space))
    if processes:
        limits.append((resource.RLIMIT_NPROC, _process_limit(policy)))
    for key, value in limits:
        resource.setrlimit(key, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (policy.cpu_seconds, policy.cpu_seconds + 1))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the file limit fails instead (EFBIG)


def _process_limit(policy):
    """RLIMIT_NPROC counts the processes of the real uid: per submission with a private uid; in the
    basic mode of an ordinary user, all of that user's processes, so the cap sits above them."""
    if policy.mode == "basic" and policy.uid is None and os.geteuid() != 0:
        mine = sum(1 for entry in os.listdir("/proc") if entry.isdigit() and _owner(entry) == os.getuid())
        return mine + policy.processes
    return policy.processes


def _owner(pid):
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _build_view(policy, owner, root="/tmp"):
    """In a private mount namespace: a fresh tmpfs as the new root, the worker's private /tmp in it, read-only
    binds of the view and the devices, an empty /proc; pivot into it; make it read-only. The caller can read
    the view. Sources are opened before anything is mounted (a checkout or virtual environment under /tmp is
    covered by the new root's tmpfs) and bound through their descriptors; the private /tmp comes first, so
    that a view path under /tmp (a venv in /tmp/ci) is bound on top of it instead of hidden by it."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    sources, links = {}, {}
    try:
        for path in policy.view:  # links are read now too: one under /tmp is covered like the sources
            if os.path.islink(path):
                links[path] = os.readlink(path)
            else:
                sources[path] = (os.open(path, os.O_PATH | os.O_CLOEXEC), os.path.isdir(path))
        _mount("sandbox", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
        os.mkdir(root + "/tmp")
        _mount("tmp", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
               f"size={policy.tmp_bytes},nr_inodes={policy.tmp_inodes},mode=0700,uid={owner},gid={owner}")
        for path in policy.view:
            target = root + path
            if path in links:  # /lib -> usr/lib on merged-/usr systems; a virtual environment's link
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.symlink(links[path], target)
                continue
            descriptor, directory = sources[path]
            _bind_read_only(f"/proc/self/fd/{descriptor}", target, directory, os.fstatvfs(descriptor))
    finally:
        for descriptor, _ in sources.values():
            os.close(descriptor)
    for device in policy.devices:
        if os.path.exists(device):
            _bind(device, root + device, directory=False)  # devices stay usable: nodev is not set on them
    os.mkdir(root + "/proc")
    # A user namespace may mount a procfs only where one is already fully visible: the host's stays
    # here until PID 1 covers it with its own, before any student code runs, and can never be
    # uncovered (the mount is locked, no capability is left, seccomp refuses umount).
    _mount("/proc", root + "/proc", None, MS_BIND | MS_REC)
    os.chdir(root)
    _check(_libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")  # the old root now lies under "."
    _check(_libc.umount2(b".", MNT_DETACH), "umount the old root")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _bind(source, target, directory):
    if directory:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    _mount(source, target, None, MS_BIND)


def _bind_read_only(source, target, directory, stats):
    _bind(source, target, directory)  # not MS_REC: mounts below `source` stay hidden
    locked = stats.f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY)  # flags a user namespace keeps
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | locked)


def _become_pid1(policy):
    """Fork: the child is PID 1 of the new PID namespace and returns the read end of a pipe the keeper
    holds open while it lives (see `_die_with_keeper`); the parent stays the keeper."""
    alive_r = _fork_keeper(policy)
    os.setsid()
    return alive_r


def _fork_keeper(policy):
    """Fork: the parent stays the keeper (`_keep`, never returns); the child goes on sealing and gets the read
    end of a pipe the keeper holds open while it lives."""
    alive_r, alive_w = os.pipe()
    if policy.counts_pipes:  # the line the pipe listener crosses to the keeper (`_hand_pipes_to_keeper`)
        policy.pipes_keeper, policy.pipes_sandbox = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    child = os.fork()
    if child:
        os.close(alive_r)
        if policy.pipes_sandbox is not None:
            policy.pipes_sandbox.close()
        _keep(child, policy)
    os.close(alive_w)
    if policy.pipes_keeper is not None:
        policy.pipes_keeper.close()
    _die_with_keeper(alive_r, close=False)
    return alive_r


def _die_with_keeper(alive_r, close=True):
    """SIGKILL when the keeper ends (then the kernel kills the whole namespace). Armed again once the
    privileges are dropped: any change of credentials disarms it."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.set_blocking(alive_r, False)
    try:  # the keeper may have ended before the signal was armed
        if os.read(alive_r, 1) == b"":
            os._exit(1)
    except BlockingIOError:
        pass
    if close:
        os.close(alive_r)


def _keep(child, policy):
    """The keeper: waits for the sandbox's PID 1 and ends as it did (never returns).

    PID 1 ignores signals it has no handler for, SIGXCPU included: the kernel's hard CPU limit
    then kills it with SIGKILL, which the keeper passes on as SIGXCPU (the CPU limit)."""
    try:
        os.close(policy.keep_fd)  # only the sandbox holds the connection: its end is the judge's EOF
    except OSError:
        pass
    _die_with(policy.parent)  # a judge killed midway: its fork server ends, so do the keeper and PID 1
    if policy.pipes_keeper is not None:
        _serve_pipes(child, policy.pipes_keeper)
    while True:
        try:
            _, status, usage = os.wait4(child, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGKILL and usage.ru_utime + usage.ru_stime >= policy.cpu_seconds - 0.05:
            number = signal.SIGXCPU
        signal.signal(number, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), number)
        os._exit(1)
    os._exit(os.waitstatus_to_exitcode(status))


def _counts_pipes(policy):
    """Whether the keeper counts the sandbox's pipes: where the sandbox's uid is the grading user's (userns or
    basic as an ordinary user), whose pipe allowance is shared with everything else the user runs
    (seccomp.PIPE_BUDGET). A private uid's allowance is the submission's own; CUDA's driver makes pipes of its
    own (untried)."""
    return (policy.mode in ("userns", "basic") and policy.uid is None and os.geteuid() != 0 and bool(policy.bpf)
            and not _on_cuda(policy) and seccomp.SYS_SECCOMP is not None)


def _hand_pipes_to_keeper(policy, report):
    """In PID 1, once its filter is loaded: a second filter whose pipe calls wait for the keeper's answer; its
    listener goes to the keeper over the socket made before the fork, and no descriptor of it stays here."""
    channel = policy.pipes_sandbox
    if channel is None:
        return
    policy.pipes_sandbox = None
    try:
        listener = seccomp.load_with_listener(seccomp.pipe_notifier(), _libc)
        try:
            socket.send_fds(channel, [b"L"], [listener])
        finally:
            os.close(listener)
        report["on"].append(f"pipe budget {seccomp.PIPE_BUDGET}")
    except (OSError, seccomp.SeccompUnavailable) as error:
        report["off"].append(f"pipe budget: {error}")
    finally:
        channel.close()


def _serve_pipes(child, channel):
    """In the keeper: the listener PID 1 sends (none if it died first or could not make one), then its pipe
    calls answered until PID 1 ends (seccomp.serve_pipe_budget)."""
    try:
        ended = os.pidfd_open(child)
        _, fds, _, _ = socket.recv_fds(channel, 1, 1)
    except OSError:
        return
    finally:
        channel.close()
    try:
        if fds:
            seccomp.serve_pipe_budget(fds[0], ended)
    finally:
        for descriptor in (*fds, ended):
            os.close(descriptor)


def _die_with(parent):
    """SIGKILL when the process that forked this one (the fork server) ends, as it does when its judge
    dies: a submission looping forever would otherwise never notice its connection closing."""
    if LINUX and parent:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # it ended before the signal was armed
            os._exit(1)


# What of the machine a procfs (and, on CUDA, /sys) shows a namespace all the same. On the CPU the sandbox's
# procfs is mounted with subset=pid (Linux 5.8+, systemd's ProcSubset=pid): its processes' folders and nothing
# else (one mount). On CUDA the driver reads /proc/driver/nvidia, so the machine's files are masked one by one
# as container runtimes mask them (runc's and Docker's default maskedPaths and readonly folders first), plus the
# figures that identify or measure the host (kernel command line, memory, load, uptime, disks, modules...): a
# file reads empty (/dev/null bound over it), a folder is an empty read-only tmpfs, /proc/cpuinfo lists the
# usable processors only.
MASKED_FILES = (
    "/proc/kcore", "/proc/keys", "/proc/key-users", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
    "/proc/sched_debug", "/proc/interrupts", "/proc/sysrq-trigger", "/proc/kallsyms", "/proc/kpagecount",
    "/proc/kpageflags", "/proc/kpagecgroup", "/proc/vmallocinfo", "/proc/iomem", "/proc/ioports", "/proc/mtrr",
    "/proc/cmdline", "/proc/bootconfig", "/proc/meminfo", "/proc/loadavg", "/proc/uptime",
    "/proc/stat", "/proc/schedstat", "/proc/softirqs", "/proc/vmstat", "/proc/zoneinfo", "/proc/buddyinfo",
    "/proc/pagetypeinfo", "/proc/slabinfo", "/proc/swaps", "/proc/diskstats", "/proc/partitions", "/proc/version",
    "/proc/version_signature", "/proc/modules", "/proc/devices", "/proc/misc", "/proc/locks", "/proc/consoles",
    "/proc/crypto", "/proc/cgroups", "/proc/execdomains",
)
MASKED_FOLDERS = ("/proc/acpi", "/proc/asound", "/proc/scsi", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/tty",
                  "/proc/pressure", "/proc/dynamic_debug", "/sys/firmware", "/sys/devices/virtual/powercap",
                  "/sys/devices/virtual/dmi", "/sys/class/dmi")


def _private_mounts(cuda=False):
    """In PID 1: a procfs of this PID namespace (whole until `_network_and_ipc` has set its sysctls, then
    `_processes_only`; on CUDA the machine's figures masked in it); the private /tmp (see `_build_view`) is
    its working folder."""
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if cuda:
        _mask_host_figures()
    os.chdir("/tmp")


def _processes_only(cuda):
    """On the CPU, once the sysctls are set: a procfs of this namespace's processes only, over the whole one
    (no /proc/cmdline, cpuinfo, meminfo, loadavg, sys...: torch's cpuinfo library copes with their absence)."""
    if not cuda:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid")


def _mask_host_figures():
    for path in MASKED_FILES:
        if os.path.isfile(path):  # reads as empty; a write goes nowhere: no read-only remount (half the cost)
            _mount("/dev/null", path, None, MS_BIND)
    _neutral_cpuinfo()
    for path in MASKED_FOLDERS:
        if os.path.isdir(path):
            _mount("masked", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=2")


def _bind_masked(source, path):
    _mount(source, path, None, MS_BIND)
    _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)


def _neutral_cpuinfo():
    """/proc/cpuinfo lists the processors this process may run on and nothing of their model: torch's cpuinfo
    library, initialised by a first matmul, crashes on an empty one (an absent one it survives). The file
    lives in a tmpfs mounted over /tmp for a moment and detached at once: only the bound file stays."""
    if not os.path.isfile("/proc/cpuinfo"):
        return
    _mount("masks", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,nr_inodes=4,mode=0755")
    try:
        text = "".join(f"processor\t: {index}\n\n" for index in range(len(os.sched_getaffinity(0))))
        with open("/tmp/cpuinfo", "w") as neutral:
            neutral.write(text)
        _bind_masked("/tmp/cpuinfo", "/proc/cpuinfo")
    finally:
        _check(_libc.umount2(b"/tmp", MNT_DETACH), "umount the masks' tmpfs")


def _on_cuda(policy):
    return any(os.path.basename(device).startswith("nvidia") for device in policy.devices)


def _network_and_ipc(policy, report, user_namespace):
    if user_namespace:  # no user namespace below this one (seccomp refuses clone flags as well)
        _sysctl("user/max_user_namespaces", 0, report)
    _loopback_up()
    socket.sethostname(policy.hostname)
    # SysV IPC of this namespace only: a few small segments (they vanish with the namespace).
    for key, value in (("kernel/shmmax", policy.tmp_bytes), ("kernel/shmall", policy.tmp_bytes // 4096),
                       ("kernel/shmmni", 16), ("kernel/msgmni", 16), ("kernel/msgmnb", 16384),
                       ("kernel/sem", "32 256 32 16")):
        _sysctl(key, value, report)
    _mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC)  # then read-only: the values stay
    _mount(None, "/proc/sys", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _processes_only(_on_cuda(policy))


def _sysctl(key, value, report):
    try:
        _write(f"/proc/sys/{key}", str(value))
    except OSError as error:
        report["off"].append(f"{key}: {error.strerror}")


def _loopback_up():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", IFF_UP))


@functools.lru_cache(maxsize=1)
def _cap_last_cap():
    """Read while /proc/sys is there to read (`seal` asks first: the sandbox's own procfs shows processes only)."""
    return int(Path("/proc/sys/kernel/cap_last_cap").read_text())


def _drop_bounding_set():
    last = _cap_last_cap()
    for cap in range(last + 1):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def _drop_capabilities():
    _drop_bounding_set()
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = ctypes.create_string_buffer(24)  # effective, permitted, inheritable: all zero
    _check(_libc.syscall(SYS_CAPSET, ctypes.c_char_p(header), data), "capset")


def _drop_capabilities_and_uid(uid):
    _drop_bounding_set()
    _become(uid)  # leaving uid 0 clears the permitted and effective sets


def _become(uid):
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


# --------------------------------------------------------------------------- in the judge: what works

PROBE_SECONDS = 120.0  # sealing takes ~50 ms; a probe still at it after this is stuck


def probe(mode, uid=None, bpf=b""):
    """Seal a throwaway child in `mode`: (its report, None) when that works, else (None, why not)."""
    import json

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            report = seal(Policy(keep_fd=write_end, mode=mode, view=view_paths(), uid=uid, bpf=bpf))
            os.write(write_end, json.dumps({"report": report}).encode())
        except BaseException as error:  # noqa: BLE001 - anything is an answer here
            try:
                os.write(write_end, json.dumps({"why": f"{error}"[:500] or type(error).__name__}).encode())
            except OSError:
                pass
        finally:
            os._exit(0)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + PROBE_SECONDS
    try:
        while select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))[0]:
            if not (chunk := os.read(read_end, 65536)):
                break
            chunks.append(chunk)
        else:  # a seal that hangs would hang the run before its first grade, silently: refuse loudly
            os.kill(pid, signal.SIGKILL)
            raise SandboxError(f"the {mode} sandbox's probe did not finish sealing in {PROBE_SECONDS:g} s (a machine "
                               "short of CPU or memory?); grade again once the machine is quieter (docs/sandbox.md)")
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    try:
        answer = json.loads(b"".join(chunks))
    except ValueError:
        return None, "the probe died without an answer"
    if "report" in answer:
        return answer["report"], None
    return None, answer.get("why") or "no reason given"
