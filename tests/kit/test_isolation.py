"""Student processes cannot outlive their verdict, read the secrets, or write the results.

These run the real sandbox: with a uid of the worker's own (as when the grader
runs as root, e.g. on Gradescope) and without (a laptop), where the PID namespace
(or, without namespaces, the subreaper and fork-server nets) must catch what
escaped the process group.
"""

import errno
import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from grader.sandbox import processes
from grader.judging.judge import Options, grade_submission
from grader.check.student import Student
from grader.paths import ROOT
from grader.sandbox.transport import WorkerTransport

ISOLATION = [pytest.param(False, id="same-uid")] + (
    [pytest.param(True, id="own-uid")] if processes.running_as_root() else [])

# Spawned from inside a graded step: a grandchild that leaves the process group and
# the session (double fork + setsid), names itself (so that the test can see it from
# outside, where a sealed worker cannot write), then keeps touching a heartbeat file
# and tries to overwrite the results file once grading is over.
ESCAPE = '''

def _escape(heartbeat, target):
    import ctypes, os, select, time
    named, told = os.pipe()
    if os.fork():
        # The step goes on only once the grandchild has its name (and a moment after, for the test's watch, which
        # looks every 20 ms): on a busy machine it could otherwise be killed with the worker before it ever ran.
        select.select([named], [], [], 10.0)
        time.sleep(0.2)
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    ctypes.CDLL(None).prctl(15, NAME.encode(), 0, 0, 0)  # PR_SET_NAME
    os.write(told, b"x")
    for _ in range(100):
        try:
            open(heartbeat, "w").write(str(time.time()))
        except OSError:
            pass
        time.sleep(0.05)
    try:
        open(target, "w").write('{"score": 100}')
    finally:
        os._exit(0)


_original_project = project


def project(*args, **kwargs):
    _escape(HEARTBEAT, TARGET)
    return _original_project(*args, **kwargs)
'''


def heartbeat_age(path):
    return time.time() - path.stat().st_mtime if path.exists() else None


def named(name):
    """Pids of the processes that call themselves `name` (their comm)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and open(f"/proc/{entry}/comm").read().strip() == name:
                found.append(int(entry))
        except OSError:
            pass
    return found


class Watch(threading.Thread):
    """Records whether a process called `name` ever ran while the watch was on."""

    def __init__(self, name):
        super().__init__(daemon=True)
        self.name, self.seen, self.done = name, False, threading.Event()

    def run(self):
        while not self.done.is_set():
            self.seen = self.seen or bool(named(self.name))
            self.done.wait(0.02)


@pytest.mark.parametrize("isolate_user", ISOLATION)
def test_detached_processes_die_before_the_verdict(tmp_path, suite, clean, isolate_user):
    # Outside pytest's private tmp folder, open to all: an own-uid worker could write here if it were still alive.
    shared = Path(tempfile.mkdtemp(prefix="escape-", dir="/tmp"))
    shared.chmod(0o777)
    heartbeat, target = shared / "heartbeat", shared / "results.json"
    target.write_text("genuine")
    target.chmod(0o666)
    name = f"esc{uuid.uuid4().hex[:12]}"
    source = (f"HEARTBEAT = {str(heartbeat)!r}\nTARGET = {str(target)!r}\nNAME = {name!r}\n" + clean
              + ESCAPE)
    path = tmp_path / "attention.py"
    path.write_text(source)
    projection_tests = [test for test in suite if test.step == "projection"]
    watch = Watch(name)
    watch.start()
    try:
        result = grade_submission(path, "escape", projection_tests, Options(isolate_user=isolate_user))
    finally:
        watch.done.set()
        watch.join()
    assert result.score == sum(test.points for test in projection_tests)  # the attack changes nothing
    assert watch.seen, "the escape never ran: this test checks nothing"
    time.sleep(1.0)
    assert not named(name), "a process started by the student's code outlived grading"
    assert heartbeat_age(heartbeat) is None or heartbeat_age(heartbeat) > 0.8, (
        "a process started by the student's code outlived grading")
    time.sleep(5.0)
    assert target.read_text() == "genuine"
    shutil.rmtree(shared)


PROBE = '''
import errno
import os
import torch


def probe(paths):
    """1.0 for each path this process can read, then its uid."""
    readable = []
    for path in paths:
        try:
            open(path).read(1)
            readable.append(1.0)
        except OSError:
            readable.append(0.0)
    return torch.tensor(readable + [float(os.getuid())])


def can_write(path):
    try:
        open(path, "w").write("forged")
        return torch.tensor(1.0)
    except OSError:
        return torch.tensor(0.0)
'''


@pytest.mark.skipif(not processes.running_as_root(), reason="an own uid for student code needs a root grader")
def test_student_code_runs_unprivileged_and_cannot_read_secrets(tmp_path):
    path = tmp_path / "attention.py"
    path.write_text(PROBE)
    os.chmod(tmp_path, 0o700)  # a private folder, like an unpacked zip: the worker reads it before dropping
    secrets = [ROOT / "tests" / "hidden" / "oracle.py", ROOT / "solutions" / "attention.py",
               ROOT / "tests" / "public" / "chapter_data.py"]
    results = tmp_path / "results.json"
    results.write_text("genuine")
    worker = WorkerTransport(path, isolate_user=True)
    try:
        student = Student(worker)
        answer = student.call("probe", [str(p) for p in secrets]).tolist()
        assert answer[:-1] == [0.0, 0.0, 0.0], f"student code could read {answer}"
        assert answer[-1] >= processes.UID_BASE
        assert student.call("can_write", str(results)).item() == 0.0
    finally:
        worker.close()
    assert results.read_text() == "genuine"
    assert os.access(secrets[0], os.R_OK)  # the judge itself still reads them


# ------------------------------------------------------------------ what a sealed process sees (issue 26)

HOST_FIGURES = ("/proc/cmdline", "/proc/cpuinfo", "/proc/meminfo", "/proc/loadavg", "/proc/uptime", "/proc/stat",
                "/proc/version", "/proc/modules", "/proc/diskstats", "/proc/swaps")


def _what_it_reads(paths):
    """What each path shows a sealed process: its first bytes, "" when empty, None when refused."""
    found = {}
    for path in paths:
        try:
            if path.startswith("/dev/"):  # a terminal's master never ends a read: opening it is the question
                os.close(os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK))
                found[path] = "opened"
            else:
                found[path] = sorted(os.listdir(path))[:3] if os.path.isdir(path) else \
                    open(path, "rb").read(200).decode(errors="replace")
        except OSError:
            found[path] = None
    return found


def _still_computes():
    """torch and numpy after the seal: thread count, a matmul and the machine's figures they might read."""
    import numpy
    import torch

    matrix = torch.arange(16.0).reshape(4, 4)
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {"threads": torch.get_num_threads(), "matmul": float((matrix @ matrix.T).trace()),
            "numpy": float(numpy.linalg.norm(numpy.ones(4))), "cpus": os.cpu_count(), "load": load}


def _sealed(mode, ask, uid=None, basic_filter=False):
    """Seal a forked child in `mode` (seal.seal, as a worker does) and return what `ask()` answers there."""
    import json

    from grader.sandbox import seal, seccomp

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            report = seal.seal(seal.Policy(keep_fd=write_end, mode=mode, view=seal.view_paths(), uid=uid,
                                           bpf=seccomp.program(basic=basic_filter)))
            os.write(write_end, json.dumps({"report": report, "answer": ask()}).encode())
        except BaseException as error:  # noqa: BLE001 - the test says what went wrong
            os.write(write_end, json.dumps({"error": repr(error)}).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    answer = json.loads(b"".join(chunks))
    assert "error" not in answer, answer["error"]
    return answer["report"], answer["answer"]


def _namespace_modes():
    from grader.sandbox import seal

    modes = []
    for mode in ("root", "userns") if processes.running_as_root() else ("userns",):
        uid = processes.UID_BASE + 511 - len(modes) if mode == "root" else None
        if seal.probe(mode, uid)[0] is not None:
            modes.append(pytest.param(mode, uid, id=mode))
    return modes or [pytest.param(None, None, marks=pytest.mark.skip(reason="no namespaces on this machine"))]


@pytest.mark.parametrize(("mode", "uid"), _namespace_modes())
def test_the_machines_figures_are_masked_and_torch_still_computes(mode, uid):
    """Before: /proc/cmdline, cpuinfo, meminfo, loadavg... of the sandbox's own procfs were the machine's, and
    sysinfo() gave its load and memory (r_host_report put them in the student's feedback). Now: the sandbox's
    procfs shows its processes only (subset=pid; on CUDA they are masked as runc masks them, cpuinfo listing
    processors only: torch's first matmul in the sandbox crashed on an empty one); sysinfo is refused; torch's
    threads and matmul (the first one in the sandbox) and numpy are unaffected."""
    _, seen = _sealed(mode, lambda: _what_it_reads(HOST_FIGURES), uid)
    cpus = seen.pop("/proc/cpuinfo")  # absent on the CPU; on CUDA the processors it may use, not their model
    assert cpus is None or {line.split(":")[0].strip() for line in cpus.splitlines() if line} == {"processor"}, cpus
    shown = {path: text for path, text in seen.items() if text}
    assert not shown, shown
    _, computed = _sealed(mode, _still_computes, uid)
    assert computed["threads"] >= 1 and computed["cpus"] >= 1, computed
    assert computed["matmul"] == pytest.approx(1240.0) and computed["numpy"] == pytest.approx(2.0)
    assert computed["load"] is None, "sysinfo() still tells the machine's load"


def _basic_uids():
    params = [pytest.param(None, id="own-user")]
    if processes.running_as_root():
        params.append(pytest.param(processes.UID_BASE + 509, id="private-uid"))
    return params


@pytest.mark.parametrize("uid", _basic_uids())
def test_the_basic_mode_reads_its_view_and_nothing_else(uid, tmp_path):
    """Without namespaces (the basic mode: a container without them), the worker reads only the interpreter's
    view. Before: a world-readable class folder (classmates' files), the kit's checkout (solutions/, .git,
    dist/), other processes' command lines and /dev/ptmx (the machine's terminals) were open to it
    (r_hunt_solution scored 97, k_ptys_* took terminals). Now: Landlock refuses all of them; where the kernel
    has no Landlock the run says so."""
    from grader.sandbox import seal

    if seal.landlock_abi() < 1:
        pytest.skip("no Landlock in this kernel: the basic mode says so in its report (tested below)")
    classmates = tmp_path / "class"
    classmates.mkdir()
    (classmates / "alice.py").write_text("ANSWER = 42\n")
    for path in (tmp_path, classmates, classmates / "alice.py"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    secrets = [str(classmates), str(classmates / "alice.py"), str(ROOT), str(ROOT / "solutions" / "attention.py"),
               str(ROOT / ".git"), "/proc/1/cmdline", f"/proc/{os.getpid()}/environ", "/proc/cmdline", "/tmp",
               "/etc/passwd", "/dev/ptmx"]

    def ask():
        seen = _what_it_reads(secrets)
        try:
            os.openpty()
            seen["openpty"] = "a terminal"
        except OSError:
            seen["openpty"] = None
        import colorsys  # noqa: F401 - a module no one imported before the seal: read from the view now
        return {"seen": seen, "computes": _still_computes()}

    report, answer = _sealed("basic", ask, uid, basic_filter=True)
    assert "landlock view" in report["on"], report
    readable = {path: text for path, text in answer["seen"].items() if text is not None}
    assert not readable, readable
    assert answer["computes"]["matmul"] == pytest.approx(1240.0)
    assert os.access(classmates / "alice.py", os.R_OK)  # the judge itself still reads them


def test_the_basic_mode_says_when_it_cannot_confine_the_worker(monkeypatch):
    """Where Landlock is missing (an old kernel, a container's seccomp profile refusing it), the report says
    what stays open, so that the run's summary warns and --require-sandbox refuses."""
    from grader.sandbox import seal

    monkeypatch.setattr(seal, "landlock_abi", lambda: 0)
    report, _ = _sealed("basic", lambda: None, basic_filter=True)
    assert "landlock view" not in report["on"]
    assert any(item.startswith("landlock: unavailable") for item in report["off"]), report["off"]


PIPE_PROBE = r'''
import json, os, sys
sys.path.insert(0, sys.argv[1])
from grader.sandbox import seal, seccomp


def made():
    count, refused = 0, None
    for _ in range(200):  # past any budget, below the 128 descriptors: each pipe is closed at once
        try:
            ends = os.pipe()
        except OSError as error:
            refused = error.errno
            break
        count += 1
        for end in ends:
            os.close(end)
    child = os.fork()
    if child == 0:
        try:
            os.pipe()
            os._exit(0)
        except OSError:
            os._exit(3)
    return {"made": count, "refused": refused, "child": os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])}


read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        mode = sys.argv[2]
        report = seal.seal(seal.Policy(keep_fd=write_end, mode=mode, view=seal.view_paths(),
                                       bpf=seccomp.program(basic=mode == "basic")))
        os.write(write_end, json.dumps({"report": report, "answer": made()}).encode())
    except BaseException as error:
        os.write(write_end, json.dumps({"error": repr(error)}).encode())
    os._exit(0)
os.close(write_end)
data = b""
while chunk := os.read(read_end, 65536):
    data += chunk
os.waitpid(pid, 0)
print(data.decode())
'''


def _as_ordinary_user(script, *arguments):
    """Run `script` (with a readable copy of grader/ as argv[1]) as an ordinary user: this one, or, as root,
    the battery's `kittest` with its Python (tests/kit/test_hostile_battery.py: `make test-account`)."""
    tmp_path = Path(tempfile.mkdtemp(prefix="isolation-pipes-", dir="/tmp"))
    try:
        return _run_as_ordinary_user(tmp_path, script, arguments)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _run_as_ordinary_user(tmp_path, script, arguments=()):
    import pwd
    import subprocess
    import sys

    kit = tmp_path / "kit"
    shutil.copytree(ROOT / "grader", kit / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "probe.py").write_text(script)
    for path in [tmp_path, *tmp_path.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    command = [sys.executable, str(tmp_path / "probe.py"), str(kit), *arguments]
    if os.geteuid() == 0:
        python = Path("/opt/attention-kit-tests/venv/bin/python")
        try:
            pwd.getpwnam("kittest")
        except KeyError:
            pytest.skip("no account kittest: `make test-account` creates it")
        if not python.is_file():
            pytest.skip(f"no {python}: `make test-account` builds it")
        command = ["runuser", "-u", "kittest", "--", str(python), *command[1:]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("mode", ["userns", "basic"])
def test_a_sandbox_sharing_the_users_uid_gets_a_budget_of_pipes(mode):
    """In the userns and basic modes as an ordinary user, every pipe charges 16 pages to the grading user's
    fs.pipe-user-pages-soft (shared with the instructor's programs and every other sandbox). Before: a
    submission could make pipes until descriptors ran out in 64 processes (8× the allowance: r_pipe_pages_user
    left the user's new pipes one page; in the basic mode until 2026-11-26). Now: its keeper lets
    seccomp.PIPE_BUDGET through, then EMFILE, in every process of the sandbox."""
    import json

    from grader.sandbox import seccomp

    answer = json.loads(_as_ordinary_user(PIPE_PROBE, mode).strip().splitlines()[-1])
    assert "error" not in answer or mode == "userns", answer
    if "error" in answer or answer["report"]["mode"] != mode:
        pytest.skip(f"no user namespaces for an ordinary user here: {answer}")
    assert f"pipe budget {seccomp.PIPE_BUDGET}" in answer["report"]["on"], answer["report"]
    made = answer["answer"]
    assert made["made"] == seccomp.PIPE_BUDGET and made["refused"] == errno.EMFILE, made
    assert made["child"] == 3, "a child of the sandbox made a pipe past the budget"


def _modes_and_basic():
    """Every mode a worker may be sealed in here: the namespace modes, and the basic mode (its filter)."""
    return [*_namespace_modes(), pytest.param("basic", None, id="basic")]


def _refused(call):
    """The errno name `call()` failed with, or "allowed"."""
    import errno

    try:
        call()
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))
    return "allowed"


def _times_told_uptime():
    """os.times().elapsed is the clock ticks since boot where times() is allowed; refused, glibc returns the
    negated errno as the count (never an error): "allowed" only where it told more than a minute."""
    import errno

    if os.times().elapsed < 60:
        raise OSError(errno.ENOSYS, "times() told nothing")


def _sharing_and_reaching(judge_pid, locked_path):
    """What a sealed process can do to files other sandboxes see and to processes other than itself."""
    import ctypes
    import fcntl
    import resource
    import struct

    from grader.sandbox import seccomp

    libc = ctypes.CDLL(None, use_errno=True)
    resolve = seccomp._library().seccomp_syscall_resolve_name
    fcntl_number = resolve(b"fcntl")

    def raw_fcntl(fd, command, argument):
        """fcntl with a 64-bit command, as the kernel is called (Python's fcntl takes a C int)."""
        libc.syscall.restype = ctypes.c_long
        result = libc.syscall(ctypes.c_long(fcntl_number), ctypes.c_long(fd), ctypes.c_ulong(command),
                              ctypes.c_void_p(argument))
        if result < 0:
            raise OSError(ctypes.get_errno(), "fcntl")

    lock = ctypes.create_string_buffer(struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 1, 0), 32)
    fd = os.open(locked_path, os.O_RDONLY)
    read_end, write_end = os.pipe()
    other = judge_pid
    return {
        "F_SETLK": _refused(lambda: raw_fcntl(fd, fcntl.F_SETLK, ctypes.addressof(lock))),
        "F_SETLK | 1 << 32": _refused(lambda: raw_fcntl(fd, fcntl.F_SETLK | 1 << 32, ctypes.addressof(lock))),
        "F_GETLK | 1 << 32": _refused(lambda: raw_fcntl(fd, fcntl.F_GETLK | 1 << 32, ctypes.addressof(lock))),
        "F_OFD_GETLK": _refused(lambda: raw_fcntl(fd, 36, ctypes.addressof(lock))),
        "F_GETLEASE": _refused(lambda: raw_fcntl(fd, 1025, 0)),
        "F_SETPIPE_SZ | 1 << 32": _refused(lambda: raw_fcntl(write_end, 1031 | 1 << 32, 1 << 20)),
        "flock": _refused(lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)),
        "prlimit(other)": _refused(lambda: resource.prlimit(other, resource.RLIMIT_CPU)),
        "setpriority(user)": _refused(lambda: os.setpriority(os.PRIO_USER, 0, 19)),
        "setpriority(other)": _refused(lambda: os.setpriority(os.PRIO_PROCESS, other, 19)),
        "sched_setaffinity(other)": _refused(lambda: os.sched_setaffinity(other, {0})),
        "sched_setscheduler(other)": _refused(lambda: os.sched_setscheduler(other, os.SCHED_IDLE, os.sched_param(0))),
        "statvfs": _refused(lambda: os.statvfs("/dev/null")),
        "times": _refused(_times_told_uptime),
        # its own: what glibc and libraries do to the worker itself keeps working
        "prlimit(own)": _refused(lambda: resource.getrlimit(resource.RLIMIT_NOFILE)),
        "setpriority(own)": _refused(lambda: os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0))),
        "sched_setaffinity(own)": _refused(lambda: os.sched_setaffinity(0, os.sched_getaffinity(0))),
    }


@pytest.mark.parametrize(("mode", "uid"), _modes_and_basic())
def test_no_lock_lease_or_other_process_is_in_reach_and_no_filesystem_size_is_told(mode, uid):
    """Before (a red team, issue 26): fcntl's command was compared as 64 bits while the kernel reads 32, so
    `F_SETLK | 1 << 32` took locks (32,768) and `F_SETPIPE_SZ | 1 << 32` grew pipes to 1 MiB; flock and F_GETLK were
    open, so two submissions graded at once passed a whole solution through locks on the view's files (a stub
    scored 100 in every mode); in the basic mode prlimit, setpriority and sched_* reached the judge and the grading
    user's processes (RLIMIT_CPU = 1 s ended the run without grades.csv); statvfs told the machine's disk and
    memory. Now all of them are refused; the worker's own limits, nice value and CPUs still work."""
    seen = _sealed(mode, lambda: _sharing_and_reaching(os.getppid() or 1, "/usr/lib/python3.11/os.py"
                                                        if os.path.exists("/usr/lib/python3.11/os.py") else os.__file__),
                   uid, basic_filter=mode == "basic")[1]
    own = {key: seen.pop(key) for key in list(seen) if key.endswith("(own)")}
    assert own == dict.fromkeys(own, "allowed"), own
    assert "allowed" not in seen.values(), seen


def _clocks():
    return {"monotonic": time.clock_gettime(time.CLOCK_MONOTONIC), "boottime": time.clock_gettime(time.CLOCK_BOOTTIME),
            "started": int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")}


@pytest.mark.parametrize(("mode", "uid"), _namespace_modes())
def test_the_machines_uptime_is_not_the_sandboxs_to_read(mode, uid):
    """Before (a red team, issue 26): CLOCK_BOOTTIME, CLOCK_MONOTONIC and a process's start time in /proc/self/stat
    told the machine's uptime (36,745 s), put into a student's feedback. Now the namespace modes give the worker a
    time namespace whose clocks start near 0 s; durations are unchanged."""
    report, seen = _sealed(mode, _clocks, uid)
    assert "time namespace" in report["on"], report
    assert 0 < report["seal_ms"] < 60_000, report  # a duration across the namespace's edge (it was -41462944 ms)
    assert max(seen.values()) < 60, seen
    assert time.clock_gettime(time.CLOCK_BOOTTIME) > max(seen.values())  # (the machine's, outside)
