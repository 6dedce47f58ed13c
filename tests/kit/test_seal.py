"""The OS sandbox of a worker (grader/sandbox/seal.py), seen from inside and from outside.

Each test runs student code in real sealed workers and asks it what it can reach:
files, environment, descriptors, processes, the network, SysV IPC, the system
calls the filter refuses, memory and processes beyond the submission's limits.
Where this machine cannot give a protection (no user namespaces, no writable
cgroup), the tests of that protection are skipped and say why; the degraded run
itself is checked by blocking namespaces the way a container's seccomp profile does.
"""

import errno
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from grader.check.student import Student, StudentUnavailable
from grader.paths import ROOT
from grader.sandbox import entry, pool, processes, seal, seccomp
from grader.sandbox.limits import Limit
from grader.sandbox.transport import WorkerTransport
from tests.kit.launch import launched

PROTECTIONS = pool.current().protections()
SEALED = PROTECTIONS.mode in ("root", "userns")
needs_namespaces = pytest.mark.skipif(not SEALED, reason=f"no namespaces here: {PROTECTIONS.summary()}")

PROBES = '''
import ctypes
import errno
import os
import socket
import time

libc = ctypes.CDLL(None, use_errno=True)


def readable(paths):
    found = []
    for path in paths:
        try:
            os.listdir(path) if os.path.isdir(path) else open(path, "rb").read(1)
            found.append(path)
        except OSError:
            pass
    return found


def import_stdlib():
    import colorsys, wave  # noqa: F401 - modules no grader code imports: read from the view now
    return True


def environment():
    return sorted(os.environ)


def descriptors():
    return sorted(int(fd) for fd in os.listdir("/proc/self/fd"))


def descriptor_targets():
    targets = []
    for fd in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            targets.append(os.readlink("/proc/self/fd/" + fd))
        except OSError:  # the descriptor os.listdir used, closed by now
            pass
    return targets


def processes_seen():
    return [os.getpid()] + sorted(int(p) for p in os.listdir("/proc") if p.isdigit())


def connect(port, abstract):
    outcomes = []
    for family, address in ((socket.AF_INET, ("127.0.0.1", port)), (socket.AF_UNIX, abstract),
                            (socket.AF_INET, ("1.1.1.1", 53))):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(1)
                s.connect(address)
            outcomes.append("connected")
        except OSError as error:
            outcomes.append(errno.errorcode.get(error.errno, str(error.errno)))
    return outcomes


def refused():
    """errno of calls the filter refuses (0 where one succeeded)."""
    def call(*args):
        return 0 if libc.syscall(*args) >= 0 else ctypes.get_errno()
    outcomes = {"unshare_user": call(272, 0x10000000), "unshare_net": call(272, 0x40000000),
                "keyctl": call(250, 0, -3, 0, 0, 0), "add_key": call(248, b"user", b"k", b"v", 1, -3),
                "ptrace": call(101, 0, 0, 0, 0), "bpf": call(321, 0, 0, 0),
                "mount": call(165, b"x", b"/tmp", b"tmpfs", 0, 0),
                "perf_event_open": call(298, 0, 0, -1, -1, 0), "userfaultfd": call(323, 0),
                "io_uring_setup": call(425, 1, 0), "setns": call(308, 0, 0)}
    for name, family, kind in (("netlink", 16, socket.SOCK_RAW), ("unix", socket.AF_UNIX, socket.SOCK_STREAM),
                               ("inet", socket.AF_INET, socket.SOCK_STREAM)):
        try:
            socket.socket(family, kind).close()
            outcomes[name] = 0
        except OSError as error:
            outcomes[name] = error.errno
    try:
        socket.socketpair()[0].close()
        outcomes["socketpair"] = 0
    except OSError as error:
        outcomes["socketpair"] = error.errno
    # Evicting the pages of a file of the view from the machine's page cache (a channel between sandboxes).
    import mmap
    descriptor = os.open(os.__file__, os.O_RDONLY)
    outcomes["fadvise64"] = call(221, descriptor, 0, 0, 4)  # POSIX_FADV_DONTNEED
    outcomes["readahead"] = call(187, descriptor, 0, 4096)
    # Pages held by reference in a pipe, and FIFOs no keeper counts (a red team of issue 26).
    read_end, write_end = os.pipe()
    page = ctypes.create_string_buffer(4096)
    piece = (ctypes.c_void_p * 2)(ctypes.addressof(page), 4096)
    outcomes["vmsplice"] = call(278, write_end, piece, 1, 0)
    os.write(write_end, b"x")
    other_read, other_write = os.pipe()
    outcomes["splice"] = call(275, read_end, None, other_write, None, 1, 0)
    outcomes["tee"] = call(276, read_end, other_write, 1, 0)
    outcomes["mknod_fifo"] = call(259, -100, f"/tmp/fifo-{os.getpid()}".encode(), 0o10600, 0)  # mknodat
    # Another pid's scheduling values (a channel between sandboxes without a PID namespace: red team 7).
    mask = ctypes.create_string_buffer(128)
    outcomes.update(getpriority_pid=call(140, 0, 1), getpriority_user=call(140, 2, 0), ioprio_get_pid=call(252, 1, 1),
                    ioprio_get_user=call(252, 3, 0), getpgid_pid=call(121, 1), getsid_pid=call(124, 1),
                    sched_getaffinity_pid=call(204, 1, 128, mask), sched_getscheduler_pid=call(145, 1))
    for descriptor_of_pipe in (read_end, write_end, other_read, other_write):
        os.close(descriptor_of_pipe)
    mapped = mmap.mmap(descriptor, 4096, prot=mmap.PROT_READ)
    for name, advice in (("madvise_cold", 20), ("madvise_pageout", 21)):
        try:
            mapped.madvise(advice)
            outcomes[name] = 0
        except OSError as error:
            outcomes[name] = error.errno
    return outcomes


def status():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    return {key: fields[key].strip() for key in ("CapEff", "CapBnd", "NoNewPrivs", "Seccomp", "Uid")}


def leave(key, name):
    """A SysV segment, a file in /tmp and a listening abstract socket, for a later worker to find."""
    shm = libc.shmget(key, 4096, 0o1666)
    open("/tmp/" + name, "w").write("left behind")
    try:  # where the filter refuses sockets there is no listener to leave
        listener = socket.socket(socket.AF_UNIX)
        listener.bind("\\0" + name)
        listener.listen()
        globals()["_kept"] = listener
    except OSError:
        pass
    return [shm, len(os.listdir("/tmp"))]


def find(key, name):
    found = []
    if libc.shmget(key, 0, 0) >= 0:
        found.append("shm")
    if os.path.exists("/tmp/" + name):
        found.append("tmp")
    try:
        socket.socket(socket.AF_UNIX).connect("\\0" + name)
        found.append("socket")
    except OSError:
        pass
    return found


def fork_many(name, count):
    made = 0
    for _ in range(count):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.setsid()
            libc.prctl(15, name.encode(), 0, 0, 0)
            time.sleep(60)
            os._exit(0)
        made += 1
    return made


def busy_children(children, seconds):
    """CPU seconds that `children` spinning processes get in `seconds` of wall time."""
    pids = []
    for _ in range(children):
        pid = os.fork()
        if pid == 0:
            os.setsid()  # a session of its own would be a CPU share of its own: it does nothing here
            while True:
                pass
        pids.append(pid)
    time.sleep(seconds)
    used = 0
    for pid in pids:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        used += int(fields[11]) + int(fields[12])
    return used / os.sysconf("SC_CLK_TCK")


def hog_in_children(children, megabytes, seconds):
    for _ in range(children):
        if os.fork() == 0:
            hoard = bytearray(megabytes << 20)
            for index in range(0, len(hoard), 4096):
                hoard[index] = 1
            time.sleep(30)
            os._exit(0)
    time.sleep(seconds)
    return True
'''


@pytest.fixture
def start(tmp_path):
    """start(**limits) -> a Student on a sealed worker running PROBES; all closed at the end."""
    opened = []

    def run(**options):
        path = tmp_path / f"probes_{len(opened)}.py"
        path.write_text(PROBES)
        transport = WorkerTransport(path, **options)
        opened.append(transport)
        assert transport.fatal is None, transport.fatal
        return Student(transport), transport

    yield run
    for transport in opened:
        transport.close()


def test_the_protections_are_reported_before_student_code_runs(start):
    _, transport = start()
    report = transport.protections
    assert report["mode"] == PROTECTIONS.mode
    assert {"closed descriptors", "cleared environment", "rlimits", "no_new_privs"} <= set(report["on"])
    assert ("seccomp" in report["on"]) == (not any(o.startswith("seccomp") for o in PROTECTIONS.off))
    assert PROTECTIONS.summary().startswith("sandbox: ")


@needs_namespaces
def test_student_code_sees_the_interpreter_and_nothing_else(start, tmp_path):
    (tmp_path / "classmate.py").write_text("ANSWER = 42\n")
    student, _ = start()
    secrets = [str(ROOT), str(ROOT / ".git"), str(ROOT / "solutions" / "attention.py"),
               str(ROOT / "tests" / "hidden"), str(ROOT / "grader" / "paths.py"), str(tmp_path),
               str(tmp_path / "classmate.py"), "/etc/passwd", "/root", "/home", "/work", "/run", "/var"]
    seen = student.call("readable", secrets)
    # Folders on the way to the interpreter exist (listing only the next folder down), nothing else.
    assert not [path for path in seen if path not in ("/root", "/work", str(ROOT)) and not
                any(view.startswith(path + "/") for view in seal.view_paths())], seen
    assert student.call("import_stdlib") is True


def test_the_environment_and_descriptors_are_the_workers_own(start, monkeypatch):
    student, _ = start()
    assert set(student.call("environment")) <= {"PATH", "HOME", "TMPDIR", "LANG"}
    # 0-2 on /dev/null, the connection, and the one os.listdir opens to answer
    assert len(student.call("descriptors")) <= 5


@needs_namespaces
def test_student_code_is_alone_on_the_machine(start):
    listener = socket.create_server(("127.0.0.1", 0))
    abstract = socket.socket(socket.AF_UNIX)
    name = f"judge-{uuid.uuid4().hex}"
    abstract.bind("\0" + name)
    abstract.listen()
    try:
        student, _ = start()
        assert student.call("processes_seen")[:2] == [1, 1]  # PID 1 of its own namespace, alone there
        outcomes = student.call("connect", listener.getsockname()[1], "\0" + name)
        assert "connected" not in outcomes, outcomes
    finally:
        listener.close()
        abstract.close()


def test_the_filter_refuses_what_no_solution_needs(start):
    if "seccomp" not in PROTECTIONS.on:
        pytest.skip(f"no seccomp here: {PROTECTIONS.summary()}")
    if os.uname().machine != "x86_64":
        pytest.skip("the probes call system calls by their x86_64 numbers")
    student, _ = start()
    outcomes = student.call("refused")
    assert all(code in (errno.EPERM, errno.EAFNOSUPPORT, errno.ENOSYS) for code in outcomes.values()), outcomes
    state = student.call("status")
    assert state["NoNewPrivs"] == "1" and state["Seccomp"] == "2"
    if SEALED:
        assert int(state["CapEff"], 16) == 0 and int(state["CapBnd"], 16) == 0
    if processes.running_as_root():
        assert int(state["Uid"].split()[0]) >= processes.UID_BASE


@needs_namespaces
def test_nothing_crosses_from_one_submission_to_another(start):
    key, name = 0x5EA1 + os.getpid() % 1000, f"left-{uuid.uuid4().hex[:8]}"
    first, first_transport = start()
    shm, _ = first.call("leave", key, name)
    assert shm >= 0
    second, _ = start()
    assert second.call("find", key, name) == [], "a second submission found what the first left"
    first_transport.close()
    time.sleep(0.2)
    third, _ = start()
    assert third.call("find", key, name) == []
    host = Path("/proc/sysvipc/shm").read_text().split("\n")[1:]
    assert not [row for row in host if row.split() and int(row.split()[0]) == key], "its segment outlived it"


def test_a_fork_bomb_is_capped_and_dies_with_its_submission(start):
    name = f"bomb{uuid.uuid4().hex[:10]}"
    student, transport = start()
    made = student.call("fork_many", name, 300)
    assert made < entry.PROCESS_LIMIT + 2, f"{made} processes: no process limit"
    transport.close()
    time.sleep(0.5)
    assert not _named(name)


def _comm(pid):
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def test_memory_spread_over_processes_counts_as_one_submission(start):
    """Six children of 128 MiB each under a 256 MiB cap: the kernel's memory cgroup where there is
    one, else the judge's watchdog summing the submission's processes, stops the step."""
    student, transport = start(memory_limit=256 << 20, time_limit=20)
    with pytest.raises(StudentUnavailable) as stopped:
        student.call("hog_in_children", 6, 128, 5)
    assert stopped.value.limit == Limit.MEMORY, str(stopped.value)


def test_busy_processes_get_one_core_at_most(start):
    """Four spinning children share one core: a cpu cgroup's quota, or without one the session's
    autogroup (setsid does nothing in the sandbox) or else the judge's watchdog, which stops a step
    that computes on several cores at once."""
    student, _ = start(time_limit=10)
    try:
        assert student.call("busy_children", 4, 3.0) <= 1.3 * 3.0
    except StudentUnavailable as stopped:
        assert "cgroup cpu" not in PROTECTIONS.on and stopped.limit == Limit.CPU, str(stopped)


def _blocking_namespaces():
    """As a container's default seccomp profile: unshare and namespace flags of clone refused."""
    lib = seccomp._library()
    context = lib.seccomp_init(seccomp.SCMP_ACT_ALLOW)
    for name in ("unshare", "setns"):
        lib.seccomp_rule_add_array(context, seccomp._errno_action(errno.EPERM),
                                   lib.seccomp_syscall_resolve_name(name.encode()), 0, None)
    for flag in seccomp.NAMESPACE_FLAGS:
        array = (seccomp._ArgCmp * 1)(seccomp._ArgCmp(0, seccomp.SCMP_CMP_MASKED_EQ, flag, flag))
        lib.seccomp_rule_add_array(context, seccomp._errno_action(errno.EPERM),
                                   lib.seccomp_syscall_resolve_name(b"clone"), 1, array)
    try:
        return seccomp._export(lib, context)
    finally:
        lib.seccomp_release(context)


def _grade(folder, out, *flags, bpf=None):
    return subprocess.run(launched([sys.executable, "-m", "grader", "grade", folder, "--out", out, "--jobs", "2",
                                    *flags], bpf=bpf), cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_a_run_says_which_protections_were_on_and_can_refuse_to_grade_without_them(tmp_path, clean):
    if "seccomp" not in PROTECTIONS.on:
        pytest.skip("blocking namespaces needs libseccomp")
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("ann", "bob"):
        (folder / f"{name}.py").write_text(clean)
    done = _grade(folder, tmp_path / "out")
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((tmp_path / "out" / "results" / "ann.json").read_text())
    assert data["extra_data"]["sandbox"]["mode"] == PROTECTIONS.mode
    assert PROTECTIONS.summary() in done.stdout

    blocked = _blocking_namespaces()
    refused = _grade(folder, tmp_path / "refused", "--require-sandbox", bpf=blocked)
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "--require-sandbox" in refused.stderr and "pid namespace" in refused.stderr
    assert not (tmp_path / "refused" / "results").exists()

    degraded = _grade(folder, tmp_path / "degraded", bpf=blocked)
    assert degraded.returncode == 0, degraded.stderr[-2000:]
    assert "sandbox: DEGRADED (basic mode)" in degraded.stdout
    data = json.loads((tmp_path / "degraded" / "results" / "ann.json").read_text())
    assert data["extra_data"]["sandbox"]["mode"] == "basic" and data["score"] == 100
    assert "pid namespace" not in data["extra_data"]["sandbox"]["on"]


def test_a_grader_killed_midway_leaves_no_submission_running(tmp_path):
    """SIGKILL to the grader alone (not its process group): its judges and fork servers end, and with
    them every sandbox, even one whose student code loops forever and never reads its connection."""
    name = f"spin{uuid.uuid4().hex[:10]}"
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "spinner.py").write_text(f"import ctypes\n\n\nclass _Spin:\n"
                                       f"    ctypes.CDLL(None).prctl(15, b'{name}', 0, 0, 0)\n"
                                       "    while True:\n        pass\n")
    grader = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(tmp_path / "out"),
                               "--time-limit", "120"], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _named(name) and time.monotonic() < deadline and grader.poll() is None:
            time.sleep(0.1)
        assert _named(name), "the spinning submission never ran: this test checks nothing"
    finally:
        grader.kill()
        grader.wait()
    deadline = time.monotonic() + 10
    while _named(name) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _named(name), "a submission kept running after its grader was killed"


def _named(name):
    return [pid for pid in os.listdir("/proc") if pid.isdigit() and _comm(pid) == name]


def test_the_worker_never_reads_the_submission_folder(start, tmp_path):
    """The source travels over the connection: a private folder (an unpacked zip) is no obstacle,
    and student code sees its file's name, not the judge's path."""
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    path = folder / "attention.py"
    path.write_text(PROBES + "\n\ndef where():\n    return __file__\n")
    transport = WorkerTransport(path)
    try:
        assert transport.fatal is None, transport.fatal
        assert Student(transport).call("where") == "attention.py"
    finally:
        transport.close()


def test_a_worker_shares_none_of_the_judges_helpers(start):
    """No descriptor of the fork server, the resource tracker or the judge reaches student code:
    0-2 are /dev/null, and the only other is the worker's own connection."""
    student, _ = start()
    targets = student.call("descriptor_targets")
    others = [target for target in targets if target != "/dev/null" and not target.startswith("/proc/")]
    assert targets[:3] == ["/dev/null"] * 3 and len(others) == 1 and others[0].startswith("socket:"), targets


def test_a_probe_whose_seal_hangs_is_refused_loudly_not_waited_for(monkeypatch):
    """Before: the run's probe read its sealed child's answer with no end: a seal that hung held the whole class
    run, silently, before its first grade. Now the probe gives up after PROBE_SECONDS, kills its child, and the
    run refuses (SandboxError: `grade` exits 2 with the message)."""
    monkeypatch.setattr(seal, "seal", lambda policy: time.sleep(60))
    monkeypatch.setattr(seal, "PROBE_SECONDS", 0.5)
    started = time.monotonic()
    with pytest.raises(seal.SandboxError, match="did not finish sealing"):
        seal.probe("basic")
    assert time.monotonic() - started < 30  # the child was killed and reaped, not waited for


@pytest.mark.slow(reason="launches python -m grader from a linked virtual environment")
def test_a_virtual_environment_reached_through_a_link_imports_in_the_worker(tmp_path, clean, maxima):
    """sys.path keeps the link's path: the worker's view shows the link, so that a module torch imports only when
    a tensor is printed is found (before: ModuleNotFoundError, and a correct file with a print lost a step), in
    the machine's own sandbox mode (the link is read before the view's root covers /tmp, where this one is)."""
    from grader.faults.variants import VARIANTS

    link = tmp_path / "venv"
    link.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    assert seal._links_above(link / "lib") == [str(link)]
    variant = next(v for v in VARIANTS if v.id == "mha_debug_print")
    submission = tmp_path / "attention.py"
    submission.write_text(variant.apply(clean))
    out = tmp_path / "out"
    done = subprocess.run([str(link / "bin" / "python"), "-m", "grader", "grade", str(submission), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # In this machine's own mode: a link under /tmp, read after the view's root covered /tmp, once made every
    # namespace mode fail here, and the run fell back to the basic mode.
    assert f"sandbox: {pool.current().protections().mode} mode" in done.stderr, done.stderr[-2000:]
    result = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert result["score"] == sum(maxima.values()), [t["output"][:300] for t in result["tests"]
                                                     if t["score"] < t["max_score"]]
