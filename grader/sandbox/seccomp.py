"""The seccomp filter of a sealed worker: system calls a solution never needs are refused.

The filter is compiled once per process by libseccomp (the library systemd, Docker,
bubblewrap and nsjail use; Debian's `libseccomp2`, loaded through ctypes) into raw
BPF bytes; a worker only hands those bytes to prctl, which needs no library at all.
Refused with EPERM (or ENOSYS/EAFNOSUPPORT/ENOLCK where that makes callers fall back):
debugging other processes, keyrings, mounting, namespaces, eBPF, perf events,
userfaultfd, io_uring, kernel modules, kexec, clocks, swap, splicing pages into pipes,
FIFOs and device nodes, every per-user or
machine-wide kernel allowance a solution never needs (AIO, inotify, epoll, POSIX and
SysV IPC, POSIX timers, memfds on the CPU, pipes beyond 64 KiB, byte-range locks), and sockets (netlink,
vsock, packet... reach past the network namespace; unix and IP socket buffers are
memory no per-process limit counts; on CUDA unix sockets stay for the driver).
`setsid` succeeds without doing anything (the worker's session is the sandbox's CPU
share where the kernel schedules a session's processes as one group: autogroups). x86_64 and aarch64
use their own numbers; system calls of another architecture (i386, x32) kill the
process (libseccomp's bad-arch default).
"""

import ctypes
import ctypes.util
import errno
import functools
import os

DENIED = (
    # other processes' memory and descriptors
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise",
    # keyrings (per uid: shared between a user's processes, and persistent)
    "keyctl", "add_key", "request_key",
    # the filesystem view and the namespaces
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "mount_setattr", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "open_by_handle_at", "fanotify_init",
    # kernel attack surface no solution uses
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "iopl", "ioperm", "vhangup",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "lookup_dcookie", "uselib",
    "migrate_pages", "move_pages", "personality", "memfd_secret", "nfsservctl", "_sysctl",
    # allowances the kernel keeps per user or for the whole machine, which a sandbox sharing a uid (userns,
    # basic) or the machine would exhaust for everyone else; and memory held through a descriptor alone, which
    # no rlimit and, without a memory cgroup, no watchdog counts (docs/sandbox.md: "Kernel allowances")
    "io_setup", "io_submit", "io_getevents", "io_pgetevents", "io_cancel", "io_destroy",  # fs.aio-nr (machine)
    "inotify_init", "inotify_init1", "inotify_add_watch",  # max_user_instances / max_user_watches (per user)
    "epoll_create", "epoll_create1", "epoll_ctl",  # fs.epoll.max_user_watches (per user)
    "mq_open", "mq_timedsend", "mq_notify",  # POSIX message queues (per user: RLIMIT_MSGQUEUE)
    "timer_create",  # POSIX timers: a sigqueue each, charged to the user
    "name_to_handle_at", "fanotify_mark",
    # the machine's page cache of the view's files (the machine's own inodes): evicting a page on demand let two
    # sandboxes pass a solution bit by bit, a page cached or not (a red team; a stub scored 100). Reading a page
    # still caches it: docs/sandbox.md says what stays open.
    "fadvise64", "readahead",
    # pages held by reference in a pipe: vmsplice of one 4 KiB piece of a huge page keeps the whole 2 MiB page alive
    # after it is unmapped, in no process's memory (RLIMIT_AS, the resident-memory watchdog) and without a memory
    # cgroup in nothing at all (a red team held 4 GiB under a 256 MiB limit, scoring 100); splice and tee move
    # such references between pipes and files. No solution uses any of them.
    "vmsplice", "splice", "tee",
    # FIFOs and device nodes: a FIFO in the namespace modes' private /tmp is a pipe no keeper counts (1015 of them
    # used up the grading user's pipe allowance); no solution makes either
    "mknod", "mknodat",
)
# Created by the CUDA driver (its IPC and shared buffers): refused on the CPU only. sysinfo: the machine's load,
# uptime, memory and swap (what /proc/loadavg, /proc/meminfo and /proc/uptime, masked by seal.py, would say);
# glibc's getloadavg and sysconf(_SC_PHYS_PAGES) read it, no solution does (the driver may size its pools by it).
DENIED_ON_CPU = ("memfd_create", "sysinfo")
# Figures of the machine no namespace hides: the sizes of the filesystems the view shows (the machine's disk, its
# size and free space, and devtmpfs, sized at half the machine's memory: statvfs on /dev/null; glibc's statvfs,
# pathconf and shutil.disk_usage ask statfs), and times(), whose value is the clock ticks since boot (jiffies: a
# time namespace does not move it; os.times). No solution asks either. ENOSYS: callers treat the figure as unknown.
# Kept on CUDA (the driver's own).
FIGURES_ON_CPU = ("statfs", "fstatfs", "ustat", "times")
# Without namespaces (the basic mode) the worker shares the machine's files, processes and IPC: it may read what
# its uid may read, but it changes nothing. SysV IPC is the machine's (seal.py gives the namespace modes a private
# one); no file, folder or link is created, renamed, removed or changed anywhere (it would outlive the sandbox and
# carry data to a later one, or damage the grading user's files); no signal reaches another process (as the
# grading user, kill(-1) would end all of its processes).
DENIED_WITHOUT_NAMESPACES = (
    "shmget", "shmat", "msgget", "msgsnd", "semget", "semop", "semtimedop",
    "mkdir", "mkdirat", "symlink", "symlinkat", "link", "linkat", "rename", "renameat",
    "renameat2", "unlink", "unlinkat", "rmdir", "creat", "truncate", "ftruncate", "fallocate", "chmod", "fchmod",
    "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime", "utimes", "utimensat", "futimesat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal",
)
# open flags that create or truncate (<asm-generic/fcntl.h>): refused in the basic mode. __O_TMPFILE carries
# O_DIRECTORY: only its own bit is compared.
O_CREAT, O_TRUNC, O_TMPFILE_BIT = 0o100, 0o1000, 0o20000000
# fcntl commands refused: a pipe larger than its default 64 KiB (the user's pipe allowance, fs.pipe-user-pages-*,
# and memory no rlimit counts), POSIX byte-range locks (one kernel object per range, without bound) and the
# questions about locks and leases: the view's files are the machine's own inodes, so a lock or lease one sandbox
# takes is seen by every other (two submissions graded at once passed a whole solution through them, bit by bit).
F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 5, 6, 7, 36, 37, 38
# madvise advice that reclaims a mapping's pages at once (<asm-generic/mman-common.h>): on a file the process alone
# maps, it evicts the file's pages from the page cache, as fadvise64 would.
MADV_COLD, MADV_PAGEOUT = 20, 21
MADVISE_REFUSED = (MADV_COLD, MADV_PAGEOUT)
F_SETLEASE, F_GETLEASE, F_NOTIFY, F_SETPIPE_SZ = 1024, 1025, 1026, 1031
FCNTL_REFUSED = {F_SETPIPE_SZ: errno.EPERM, F_SETLEASE: errno.EPERM, F_GETLEASE: errno.EPERM, F_NOTIFY: errno.EPERM,
                 **{command: errno.ENOLCK for command in (F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK,
                                                          F_OFD_SETLKW)}}
# An int argument is compared on its low 32 bits only: the kernel reads no more of it, so `F_SETLK | 1 << 32`
# compared as 64 bits passed the filter and still took a lock.
LOW_32_BITS = 0xFFFFFFFF
# Calls that act on another process by its pid (or process group, or user): its resource limits, scheduling
# policy, CPUs, nice value and I/O priority. Without a PID namespace (the basic mode) the grader and every other
# process of the grading user are in reach: RLIMIT_CPU = 1 s on the judge ended the run without grades.csv.
# Allowed on the worker itself only (pid 0, as glibc calls them); refused for any other target. (argument index
# of the pid, and of the "which" that must be "a process" where the call has one: PRIO_PROCESS 0,
# IOPRIO_WHO_PROCESS 1)
# Reading them is refused too (a red team, 2026-11-28): without a PID namespace one sandbox showed a classmate's
# solution to another running beside it, 2 bits at a time in its own I/O priority, read with ioprio_get(its pid);
# the nice value, CPUs, scheduling policy, session and process group of another pid (or the highest priority of a
# process group or user) carry the same. A solution reads none of them.
OWN_PROCESS_ONLY = {"prlimit64": (0, None), "sched_setaffinity": (0, None), "sched_setscheduler": (0, None),
                    "sched_setparam": (0, None), "sched_setattr": (0, None), "setpriority": (1, (0, 0)),
                    "ioprio_set": (1, (0, 1)),
                    "getpriority": (1, (0, 0)), "ioprio_get": (1, (0, 1)), "sched_getaffinity": (0, None),
                    "sched_getscheduler": (0, None), "sched_getparam": (0, None), "sched_getattr": (0, None),
                    "sched_rr_get_interval": (0, None), "getsid": (0, None), "getpgid": (0, None),
                    "setpgid": (0, None), "get_robust_list": (0, None), "migrate_pages": (0, None),
                    "move_pages": (0, None)}
# <linux/sched.h>: the namespace flags clone(2) must not carry
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)
# Sockets of every family are refused: a solution needs none, and without a memory cgroup (an ordinary user)
# nothing counts what their buffers hold (a few hundred MiB per process). The worker's connection to the judge
# exists before the filter loads. On CUDA, unix sockets stay (the driver may talk to its daemons over them).
AF_UNIX = 1
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE, SCMP_CMP_EQ, SCMP_CMP_GE, SCMP_CMP_MASKED_EQ = 1, 4, 5, 7
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class SeccompUnavailable(RuntimeError):
    pass


def _errno_action(code):
    return 0x00050000 | code


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _library():
    try:  # the soname first: find_library runs ldconfig, which costs more than building the filter
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so", use_errno=True)
        except OSError as error:
            raise SeccompUnavailable(f"libseccomp is not installed ({error}); `make test` installs libseccomp2") \
                from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


@functools.lru_cache(maxsize=4)
def program(unix_sockets=False, basic=False):
    """The filter as raw BPF bytes (built once per process and kind); SeccompUnavailable without libseccomp.
    `unix_sockets`: CUDA's (unix sockets and memfds stay); `basic`: the mode without namespaces (SysV refused)."""
    lib = _library()
    context = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not context:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        def refuse(name, code, *comparisons):
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:  # unknown to this architecture: nothing to refuse
                return
            array = (_ArgCmp * len(comparisons))(*comparisons) if comparisons else None
            if lib.seccomp_rule_add_array(context, _errno_action(code), number, len(comparisons), array) < 0:
                raise SeccompUnavailable(f"libseccomp refused the rule for {name}")

        for name in DENIED + (() if unix_sockets else DENIED_ON_CPU) + (DENIED_WITHOUT_NAMESPACES if basic else ()):
            refuse(name, errno.EPERM)
        for name in () if unix_sockets else FIGURES_ON_CPU:
            refuse(name, errno.ENOSYS)
        for command, code in FCNTL_REFUSED.items():
            refuse("fcntl", code, _ArgCmp(1, SCMP_CMP_MASKED_EQ, LOW_32_BITS, command))
        refuse("flock", errno.ENOLCK)  # a whole-file lock is as visible to other sandboxes as a byte range
        for advice in MADVISE_REFUSED:  # evicting a mapped file's pages: the page cache again (DENIED)
            refuse("madvise", errno.EPERM, _ArgCmp(2, SCMP_CMP_EQ, advice, 0))
        for call, (pid, which) in OWN_PROCESS_ONLY.items():
            refuse(call, errno.EPERM, _ArgCmp(pid, SCMP_CMP_NE, 0, 0))  # any other pid (64 bits: 1 << 32 too)
            if which is not None:
                refuse(call, errno.EPERM, _ArgCmp(which[0], SCMP_CMP_NE, which[1], 0))
        if basic:
            for flag in (O_CREAT, O_TRUNC, O_TMPFILE_BIT):
                refuse("open", errno.EPERM, _ArgCmp(1, SCMP_CMP_MASKED_EQ, flag, flag))
                refuse("openat", errno.EPERM, _ArgCmp(2, SCMP_CMP_MASKED_EQ, flag, flag))
            refuse("openat2", errno.ENOSYS)  # its flags sit in memory no filter reads: glibc falls back to openat
            # A pidfd of any pid tells which exist and when they end (red team 8 scanned 32768 pids in 0.15 s):
            # without a PID namespace, a channel between sandboxes. ENOSYS: callers (asyncio) fall back to waitpid.
            refuse("pidfd_open", errno.ENOSYS)
        # setsid succeeds and does nothing: without a cpu cgroup, the kernel's autogroups (one per session)
        # then give the whole sandbox one share of the CPU however many processes it starts.
        refuse("setsid", 0)
        # Threads and plain forks pass; any namespace flag is refused (one rule per flag: libseccomp
        # compares a masked argument for equality only).
        for flag in NAMESPACE_FLAGS:
            refuse("clone", errno.EPERM, _ArgCmp(0, SCMP_CMP_MASKED_EQ, flag, flag))
        # clone3 passes its flags in memory no filter can read: ENOSYS makes glibc fall back to clone.
        refuse("clone3", errno.ENOSYS)
        for call in ("socket", "socketpair"):
            if unix_sockets:
                refuse(call, errno.EAFNOSUPPORT, _ArgCmp(0, SCMP_CMP_EQ, 0, 0))
                refuse(call, errno.EAFNOSUPPORT, _ArgCmp(0, SCMP_CMP_GE, AF_UNIX + 1, 0))
            else:
                refuse(call, errno.EAFNOSUPPORT)
        return _export(lib, context)
    finally:
        lib.seccomp_release(context)


def _export(lib, context):
    read_end, write_end = os.pipe()
    try:
        if lib.seccomp_export_bpf(context, write_end) < 0:
            raise SeccompUnavailable("seccomp_export_bpf failed")
        os.close(write_end)
        write_end = None
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(read_end)
        if write_end is not None:
            os.close(write_end)


# ------------------------------------------------------------- a budget of pipes, counted outside the sandbox

# Where the sandbox shares the grading user's uid (userns as an ordinary user), every pipe's 16 pages are charged
# to that user's fs.pipe-user-pages-soft (16384 pages), which no rlimit can bound across the sandbox's processes
# (RLIMIT_NOFILE is per process, RLIMIT_NPROC multiplies it). So pipe and pipe2 wait for an answer from the
# sandbox's keeper (outside, unfiltered), which lets the first PIPE_BUDGET of them through and refuses the rest
# with EMFILE: at most PIPE_BUDGET * 16 pages per submission, whatever it does.
PIPE_CALLS = ("pipe", "pipe2")
PIPE_BUDGET = 64
SCMP_ACT_NOTIFY = 0x7FC00000
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 1, 1 << 3
SECCOMP_USER_NOTIF_FLAG_CONTINUE = 1
# <linux/seccomp.h>: _IOWR('!', 0, struct seccomp_notif) (80 bytes), _IOWR('!', 1, struct seccomp_notif_resp) (24)
SECCOMP_IOCTL_NOTIF_RECV, SECCOMP_IOCTL_NOTIF_SEND = 0xC0502100, 0xC0182101
SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}.get(os.uname().machine)


@functools.lru_cache(maxsize=1)
def pipe_notifier():
    """BPF: pipe and pipe2 notify the listener (SECCOMP_RET_USER_NOTIF); every other call passes this filter."""
    lib = _library()
    context = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not context:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        for name in PIPE_CALLS:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number >= 0 and lib.seccomp_rule_add_array(context, SCMP_ACT_NOTIFY, number, 0, None) < 0:
                raise SeccompUnavailable(f"libseccomp refused the notification rule for {name}")
        return _export(lib, context)
    finally:
        lib.seccomp_release(context)


def load_with_listener(bpf, libc):
    """Install `bpf` (no_new_privs already set) and return the descriptor its notifications arrive on."""
    if SYS_SECCOMP is None:
        raise OSError(errno.ENOSYS, "seccomp(2): unknown architecture")
    buffer = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.addressof(buffer))
    listener = libc.syscall(ctypes.c_long(SYS_SECCOMP), ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
                            ctypes.c_uint(SECCOMP_FILTER_FLAG_NEW_LISTENER), ctypes.byref(prog))
    if listener < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"seccomp listener: {os.strerror(code)}")
    return listener


def serve_pipe_budget(listener, ended, budget=PIPE_BUDGET):
    """In the keeper: answer the sandbox's pipe calls until `ended` (PID 1's pidfd) is readable or the listener
    hangs up: the first `budget` go through, later ones fail with EMFILE. Returns how many were asked for."""
    import fcntl
    import select
    import struct

    poller = select.poll()
    poller.register(listener, select.POLLIN)
    poller.register(ended, select.POLLIN)
    asked = 0
    while True:
        try:
            events = dict(poller.poll())
        except InterruptedError:
            continue
        if ended in events or events.get(listener, 0) & (select.POLLHUP | select.POLLERR):
            return asked
        request = bytearray(80)  # struct seccomp_notif, zeroed as the kernel requires
        try:
            fcntl.ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, request)
        except OSError:  # the caller died meanwhile (ENOENT), or a signal
            continue
        (ident,) = struct.unpack_from("Q", request)
        asked += 1
        allowed = asked <= budget
        answer = struct.pack("QqiI", ident, 0, 0 if allowed else -errno.EMFILE,
                             SECCOMP_USER_NOTIF_FLAG_CONTINUE if allowed else 0)
        try:
            fcntl.ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, bytearray(answer))
        except OSError:
            pass


def load(bpf, libc):
    """Set no_new_privs, then install `bpf` on the calling thread (and so on all it starts)."""
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"no_new_privs: {os.strerror(code)}")
    buffer = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.addressof(buffer))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"seccomp: {os.strerror(code)}")
