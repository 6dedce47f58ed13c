"""Issue 19's hostile battery: fresh attacks (tests/kit/hostile/) graded as a class would be.

Every attack is appended to a base (the stub, the clean solution or a buggy one) and graded with
honest classmates through `python -m grader grade` on a class folder, from a world-readable copy
of the kit, in four modes: as root (workers under private uids, as on Gradescope), as an
ordinary user (`kittest`, or the user running the tests), and both again in the basic mode (a kit
copy whose worker tries no namespaces, as in a container that allows none). A few also run through
the Gradescope zip. As root nothing skips: `make test` creates the account and a Python it can run
(`make test-account`), and a machine without them fails `test_every_mode_of_the_battery_can_run`. For every run: it ends with grades.csv, honest classmates keep full marks, no attack scores
above its base graded honestly, nothing it started is still running and nothing it wrote is left.
Each attack also leaves evidence that it ran (its own error messages, or what it tried to reach),
so that a contained attack is told apart from one that never ran.

Where a protection is missing, the check is marked `xfail(strict=True)` naming that protection
(WAITS), so that the mark fails, and must go, the day the protection holds. With the OS sandbox
(grader/sandbox/seal.py) nothing is marked as root or as an ordinary user; in the basic fallback the
marks record what it leaves open (HOSTILE_BASIC=0 leaves the basic modes out of a run by hand). HOSTILE_KEEP=1 keeps the
class folders, OUTs and run reports; HOSTILE_REUSE=<kept workspace> re-reads them without grading.
Runtime, 2 cores: about 1.3 minutes per mode, about 2.5 minutes for root and the Gradescope zip.
"""

import contextlib
import dataclasses
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from grader.build.exercises import code_sections, notebook
from grader.chapter import TOTAL_POINTS
from grader.check.runner import run_test
from grader.check.student import in_process
from grader.paths import ROOT
from grader.sandbox.seal import landlock_abi
from tests.kit.test_hostile import buggy_solution

HOSTILE = Path(__file__).parent / "hostile"
USER = "kittest"  # an ordinary account the root runs switch to (`make test-account` creates it)
SANDBOX_UIDS = range(61000, 61000 + 512)  # grader.sandbox.processes.UidPool
HONEST = ("honest_alice", "honest_zoe")
ROSTER_NAME = "Quentin Rosterperson"
TIME_LIMIT = 10  # seconds per step (the default): honest classmates must never come near it
MEMORY_LIMIT = "256MiB"
PRESSURE_TIME_LIMIT = 5  # the pressure attacks last a few of these
WATCHED_PLACES = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")
RUNNING_AS_ROOT = os.geteuid() == 0


# --------------------------------------------------------------------------- the attacks

@dataclasses.dataclass(frozen=True)
class Attack:
    name: str
    base: str  # "stub", "clean" or "buggy"
    weakness: str  # the class, 1-9, or "x" beyond the list
    run: str  # "main", "later", "pressure" or "disruptive"
    text: str


def read_attacks():
    found = {}
    for path in sorted(HOSTILE.glob("*.py")):
        text = path.read_text()
        fields = dict(re.findall(r"^(base|class|run|role): (\S+)$", text, re.MULTILINE))
        if fields.get("role") == "fragment":
            continue
        found[path.stem] = Attack(path.stem, fields["base"], fields["class"], fields["run"], text)
    return found


ATTACKS = read_attacks()
DIGESTS = (HOSTILE / "_digests.py").read_text()


def submission(attack, bases, fill):
    """The attack's file: its base, the request-logging fragment for class-3 attacks, then the attack."""
    parts = [bases[attack.base]]
    if attack.weakness == "3" and attack.base != "stub":
        parts.append(DIGESTS)
    parts.append(attack.text)
    text = "\n\n".join(parts)
    for key, value in fill.items():
        text = text.replace(f"@{key}@", str(value))
    return text


# Where a protection is still missing: (attack or run, mode, what) -> the protection it waits on.
# `what` names the check ("grades", "honest", "running", "left", "score", or "evidence" for the attack's
# own evidence test); modes are "root", "user", "gradescope" and, with HOSTILE_BASIC=1, the fallback
# without namespaces ("root-basic", "user-basic"). With the OS sandbox (grader/sandbox/seal.py) every
# attack is contained as root and as an ordinary user; what the basic fallback leaves open, as
# measured (it is what `--require-sandbox` refuses to grade without):
_MOUNT = "a mount namespace (a read-only view without the class folder, the kit's checkout or OUT)"
_PID = "a PID namespace (other processes, their /proc entries and signals out of reach)"
# The basic mode's filter (no file, folder or link made or changed, no SysV IPC, no signal to another process,
# no socket) and the checkout made private to root closed what the lines removed from here recorded: files and
# links carried to a later run, OUT squatted, the judge killed, .git and dist/ read as root. Its Landlock view
# (seal._confine_to_view: the worker opens the interpreter's view and nothing else) closed the rest where the
# kernel has Landlock: classmates' files, the checkout, /proc (command lines, the judge's environment and memory)
# and /dev/ptmx. The keeper of the userns and basic modes counts the sandbox's pipes (seal._counts_pipes).
WAITS = {
    # A time namespace needs CAP_SYS_ADMIN (in a user namespace at least): without namespaces CLOCK_BOOTTIME and
    # CLOCK_MONOTONIC are the machine's (docs/sandbox.md, "What a worker can say about the host").
    ("r_uptime_clocks", "root-basic", "evidence"): "a time namespace: the basic mode's clocks are the machine's",
    ("r_uptime_clocks", "user-basic", "evidence"): "a time namespace: the basic mode's clocks are the machine's",
}
# Without Landlock (a kernel older than 5.13, or one without it in its lsm= list) the basic mode leaves these open.
_PTY = "a devpts of its own (a mount namespace): /dev/ptmx is the machine's"
WAITS_WITHOUT_LANDLOCK = {
    ("k_ptys_openpty", "root-basic", "allowance"): _PTY,
    ("k_ptys_openpty", "user-basic", "allowance"): _PTY,
    ("k_ptys_ptmx", "root-basic", "allowance"): _PTY,
    ("k_ptys_ptmx", "user-basic", "allowance"): _PTY,
    ("r_hunt_solution", "root-basic", "score"): f"{_MOUNT}: a world-readable class folder (named in the judge's "
                                                "command line) holds classmates' solutions",
    ("r_hunt_solution", "user-basic", "score"): f"{_MOUNT}: the grading user's worker reads classmates' files",
    ("c1_classmates", "root-basic", "score"): f"{_MOUNT}: a private uid still reads classmates' files",
    ("c1_classmates", "user-basic", "score"): f"{_MOUNT}: the grading user's worker reads classmates' files",
    ("c8_checkout", "user-basic", "score"): f"{_MOUNT}: the kit's checkout holds the solution",
    ("c1_names", "root-basic", "evidence"): f"{_MOUNT} and {_PID}: the class folder and command lines are readable",
    ("c1_names", "user-basic", "evidence"): f"{_MOUNT} and {_PID}: the class folder and command lines are readable",
    ("c8_environment", "user-basic", "evidence"): f"{_PID}: the judge's /proc/<pid>/environ has the grading user's uid",
    ("x_judge_memory", "user-basic", "evidence"): f"{_PID}: the judge's /proc/<pid>/mem has the grading user's uid",
}
if landlock_abi() < 1:
    WAITS.update(WAITS_WITHOUT_LANDLOCK)


# Whether the basic fallback lets these through depends on timing (a classmate still serving when asked) and
# on the machine's /dev/ptmx (its permissions, pty.max, what else holds terminals), where a complete solution lies
# readable, and whether the judge's memory is readable at the moment the attack looks (seen both ways in CI).
BY_CHANCE = {("k_ptys_openpty", "root-basic", "allowance"), ("k_ptys_openpty", "user-basic", "allowance"),
             ("k_ptys_ptmx", "root-basic", "allowance"), ("k_ptys_ptmx", "user-basic", "allowance"),
             ("r_hunt_solution", "root-basic", "score"), ("r_hunt_solution", "user-basic", "score"),
             ("x_judge_memory", "user-basic", "evidence")}


def apply_waits(request, name, mode_name, what):
    reason = WAITS.get((name, mode_name, what))
    if reason:
        request.applymarker(pytest.mark.xfail(strict=(name, mode_name, what) not in BY_CHANCE,
                                              reason=f"not contained without {reason}"))


# --------------------------------------------------------------------------- bases graded honestly

@pytest.fixture(scope="module")
def bases(clean, stub):
    return {"stub": stub, "clean": clean, "buggy": buggy_solution(clean)}


def score_in_process(source, suite, folder, name):
    """What `source` scores with every check, run in this interpreter (honest code scores the same
    here as in a worker)."""
    path = folder / f"{name}.py"
    path.write_text(source)
    student, _ = in_process(path)
    return sum(test.points for test in suite if run_test(test, student)[0])


@pytest.fixture(scope="module")
def honest_scores(bases, suite, tmp_path_factory):
    folder = tmp_path_factory.mktemp("honest")
    return {name: score_in_process(source, suite, folder, name) for name, source in bases.items()}


@pytest.fixture(scope="module")
def hidden_digests(bases, suite, tmp_path_factory):
    """Digests (see hostile/_digests.py) of the requests only hidden checks make, found by running
    every check in this interpreter on the clean and the buggy base with the same logging."""
    folder = tmp_path_factory.mktemp("digests")
    made = {"public": set(), "hidden": set()}
    for base in ("clean", "buggy"):
        path = folder / f"{base}.py"
        path.write_text(bases[base] + "\n\n" + DIGESTS + "\n\nclass _Log:\n    _log_everything()\n")
        student, _ = in_process(path)
        seen = student.transport.session.module._SEEN
        for test in suite:
            before = len(seen)
            run_test(test, student)
            made[test.kind].update(seen[before:])
    only = made["hidden"] - made["public"]
    assert len(only) > 20, "the hidden checks should make many requests the public ones never make"
    return only


# --------------------------------------------------------------------------- one class run

# Runs the grader as a child of a child subreaper, so that whatever the grader leaves running is
# re-parented here and found: reports the exit, the output (bounded: an attack may flood it), the
# processes left behind (killed), and the peak resident memory of the grader's waited-for processes.
WRAPPER = r'''
import ctypes, json, os, resource, signal, subprocess, sys, threading, time

ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
spec = json.loads(sys.argv[1])
tails = {}


def pump(stream, key):
    total, tail = 0, b""
    for chunk in iter(lambda: stream.read(65536), b""):
        total += len(chunk)
        tail = (tail + chunk)[-30000:]
    tails[key] = (total, tail.decode(errors="replace"))


def table():
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as status:
                    fields = dict(line.split(":", 1) for line in status if ":" in line)
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    words = cmdline.read().replace(b"\0", b" ").decode(errors="replace")[:300]
                if fields["State"].split()[0] not in "ZX":
                    found[int(entry)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]), words)
            except (OSError, KeyError, ValueError):
                pass
    return found


def left_behind():
    processes = table()
    mine = {pid for pid, (parent, _, _) in processes.items() if parent == os.getpid()}
    frontier = list(mine)
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _, _) in processes.items():
            if ppid == parent and pid not in mine:
                mine.add(pid)
                frontier.append(pid)
    low, high = spec["uids"]  # a private uid's processes, of this kit copy (other graders may run beside)
    mine |= {pid for pid, (_, uid, words) in processes.items()
             if low <= uid < high and pid != os.getpid() and spec["kit"] in words}
    return {pid: processes[pid][2] for pid in mine}


started = time.monotonic()
process = subprocess.Popen(spec["command"], cwd=spec["cwd"], env=spec["env"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True)
readers = [threading.Thread(target=pump, args=(process.stdout, "out")),
           threading.Thread(target=pump, args=(process.stderr, "err"))]
for reader in readers:
    reader.start()
try:
    code = process.wait(spec["timeout"])
except subprocess.TimeoutExpired:
    os.killpg(process.pid, signal.SIGKILL)
    code = "timeout"
    process.wait()
seconds = time.monotonic() - started
time.sleep(1.0)
leftovers = left_behind()
for _ in range(50):
    found = left_behind()
    if not found:
        break
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
for reader in readers:
    reader.join(10)
print(json.dumps({"code": code, "seconds": seconds, "leftovers": leftovers,
                  "out": tails.get("out", (0, "")), "err": tails.get("err", (0, "")),
                  "peak_rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
'''


@dataclasses.dataclass
class Mode:
    name: str  # "root" or "user"
    user: str  # the account the grader runs as
    uid: int
    token: str
    workspace: Path
    kit: Path
    shared: Path
    port: int
    python: str = sys.executable  # the interpreter the grader runs with

    @property
    def same_user(self):
        """The grader runs as the user running the tests: their other files look alike."""
        return self.uid == os.geteuid()

    @property
    def watched_uids(self):
        """Whose processes, files and kernel objects count as the students'."""
        return (SANDBOX_UIDS.start, SANDBOX_UIDS.stop) if self.uid == 0 else (self.uid, self.uid + 1)


@dataclasses.dataclass
class Run:
    mode: Mode
    name: str
    members: dict  # submission name -> Attack (None for an honest classmate)
    out: Path
    report: dict
    new_files: list
    new_ipc: list
    new_keys: dict
    listened: list

    def results(self, name):
        path = self.out / "results" / f"{name}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def text(self, name):
        path = self.out / "results" / f"{name}.json"
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""

    def grades(self):
        path = self.out / "grades.csv"
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def failure(self):
        """Why the run itself failed, or None."""
        if self.report["code"] != 0:
            return f"the grader exited with {self.report['code']}: {self.report['err'][1][-3000:]}"
        if self.grades() is None:
            return f"no grades.csv: {self.report['err'][1][-3000:]}"
        return None


def make_kit_copy(target, clean):
    """A world-readable copy of the kit as an instructor keeps it: the engine, the tests, the solution,
    the sample class, a dist/ holding the answer key and a .git holding the solution as an object."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "grader", target / "grader", ignore=ignore)
    (target / "tests").mkdir(parents=True)
    (target / "tests" / "__init__.py").write_text("")
    for kind in ("public", "hidden"):
        shutil.copytree(ROOT / "tests" / kind, target / "tests" / kind, ignore=ignore)
    (target / "solutions").mkdir()
    (target / "solutions" / "attention.py").write_text(clean)
    if (ROOT / "samples" / "class").is_dir() and os.access(ROOT / "samples" / "class", os.R_OK):
        shutil.copytree(ROOT / "samples" / "class", target / "samples" / "class", ignore=ignore)
    answer_key = target / "dist" / "nbgrader" / "source" / "attention" / "attention.ipynb"
    answer_key.parent.mkdir(parents=True)
    answer_key.write_text(json.dumps(notebook(code_sections(clean))))
    blob = f"blob {len(clean.encode())}\0".encode() + clean.encode()
    loose = target / ".git" / "objects" / "5e" / "11a7b0ee5e5a15c7d1e0c0de5ca1ab1eb0a710ff"
    loose.parent.mkdir(parents=True)
    loose.write_bytes(zlib.compress(blob))
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def snapshot(mode):
    """Entries in the world-writable places, SysV objects and keyring use that are the students'."""
    low, high = mode.watched_uids
    files = set()
    for place in WATCHED_PLACES:
        with contextlib.suppress(OSError):
            for entry in os.scandir(place):
                with contextlib.suppress(OSError):
                    owner = entry.stat(follow_symlinks=False).st_uid
                    if low <= owner < high and (not mode.same_user or "hostile" in entry.name or
                                                entry.name.startswith("pymp-")):
                        files.add(entry.path)
    ipc = set()
    for kind in ("shm", "msg", "sem"):
        with contextlib.suppress(OSError):
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
            header = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[0].split()
            for line in lines:
                fields = dict(zip(header, line.split()))
                if low <= int(fields.get("cuid", -1)) < high:
                    ipc.add(f"{kind}:{fields.get('key')}:{fields.get('shmid') or fields.get('msqid') or fields.get('semid')}")
    return files, ipc, keys_of(mode)


def keys_of(mode):
    """The students' keys: per private uid, how many the kernel counts (root mode: no one else uses those
    uids); for an ordinary user, the keys it can see whose description an attack would use (its count
    also moves with the session keyrings runuser makes)."""
    low, high = mode.watched_uids
    keys = {}
    if mode.uid == 0:
        with contextlib.suppress(OSError):
            for line in Path("/proc/key-users").read_text().splitlines():
                uid, _, rest = line.partition(":")
                if uid.strip().isdigit() and low <= int(uid) < high:
                    keys[int(uid)] = int(rest.split()[1].split("/")[0])
        return keys
    if mode.same_user:
        text = Path("/proc/keys").read_text()
    else:
        text = subprocess.run([shutil.which("runuser"), "-u", mode.user, "--", "cat", "/proc/keys"],
                              capture_output=True, text=True).stdout
    for line in text.splitlines():
        if "hostile" in line:
            keys[int(line.split()[0], 16)] = 1
    return keys


def remove_leftovers(mode, files, ipc):
    for path in files:
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                # rm, not shutil.rmtree: a 5000-deep chain (r_deep_litter) makes rmtree raise RecursionError
                subprocess.run(["rm", "-rf", "--", path], capture_output=True)
            else:
                os.unlink(path)
    for entry in ipc:
        kind, _, ident = entry.split(":")
        flag = {"shm": "-m", "msg": "-q", "sem": "-s"}[kind]
        subprocess.run(["ipcrm", flag, ident], capture_output=True)


class Listener:
    """TCP, UDP and an abstract unix socket on this machine, recording whatever reaches them."""

    def __init__(self, port, token):
        self.received = []
        self.sockets = []
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", port))
        tcp.listen(64)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", port))
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        abstract.bind(f"\0hostile-listener-{token}")
        abstract.listen(64)
        self.sockets = [tcp, udp, abstract]
        self.stopping = False
        for server in (tcp, abstract):
            threading.Thread(target=self._accept, args=(server,), daemon=True).start()
        threading.Thread(target=self._datagrams, args=(udp,), daemon=True).start()

    def _accept(self, server):
        while not self.stopping:
            try:
                client, _ = server.accept()
                client.settimeout(1)
                self.received.append(client.recv(4096) or b"(a connection)")
                client.close()
            except OSError:
                return

    def _datagrams(self, server):
        while not self.stopping:
            try:
                datagram = server.recv(4096)
            except OSError:
                return
            if datagram and not self.stopping:
                self.received.append(datagram)

    def close(self):
        self.stopping = True
        for server in self.sockets:
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)
            server.close()


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# A Python every account can run (`make test-account` builds it as root: the system's python3.X with hard
# links of .venv's packages), for the runs as `kittest` and in the basic mode (whose private uids must reach
# Python too: the kit's .venv may live under /root, and opening /root to them is no test's business).
TEST_PYTHON = Path("/opt/attention-kit-tests/venv/bin/python")
SETUP_HINT = "run `make test-account` as root (make test does): it creates the account and its Python"


def user_can_grade(user, python):
    """Whether `user` can run `python` with torch."""
    done = subprocess.run(["runuser", "-u", user, "--", str(python), "-c", "import torch"],
                          capture_output=True, timeout=120)
    return done.returncode == 0


# The fallback where namespaces cannot be had (a container without user namespaces, Docker's default
# seccomp profile): the kit copy's worker is told to try none, so the run shows what the basic mode
# (rlimits, a private uid as root, seccomp, closed descriptors, a cleared environment, permissions) leaves
# open. Graded in every `make test` (HOSTILE_BASIC=0 leaves it out of a run by hand).
NAMESPACE_MODES = 'for candidate in ("root", "userns") if root else ("userns",):'


def modes_available():
    """As root (CI): root, user (as kittest), root-basic and user-basic, none skipped: what is missing
    fails its tests (SETUP_HINT). As an ordinary user: user and user-basic; root cannot be had."""
    basic = os.environ.get("HOSTILE_BASIC", "1") != "0"
    if RUNNING_AS_ROOT:
        names = ("root", "user") + (("root-basic", "user-basic") if basic else ())
        return [pytest.param(name, id=name) for name in names]
    as_root = pytest.mark.skip(reason="grading as root needs the tests to run as root")
    return [pytest.param("root", id="root", marks=as_root), pytest.param("root-basic", id="root-basic", marks=as_root),
            pytest.param("user", id="user")] + ([pytest.param("user-basic", id="user-basic")] if basic else [])


def test_every_mode_of_the_battery_can_run():
    """As root the battery grades as `kittest` too: a machine that lacks it fails here, not in silence."""
    if not RUNNING_AS_ROOT:
        pytest.skip("as an ordinary user the battery grades as that user")
    assert shutil.which("runuser"), "no runuser (util-linux) to grade as an ordinary user"
    try:
        pwd.getpwnam(USER)
    except KeyError:
        pytest.fail(f"no account {USER!r}: {SETUP_HINT}")
    assert TEST_PYTHON.is_file() and user_can_grade(USER, TEST_PYTHON), f"{USER} cannot run {TEST_PYTHON}: {SETUP_HINT}"


@pytest.fixture(scope="module", params=modes_available())
def mode(request, clean, tmp_path_factory):
    name = request.param
    python = sys.executable
    if RUNNING_AS_ROOT and name != "root":
        python = str(TEST_PYTHON)
        if not TEST_PYTHON.is_file():
            pytest.fail(f"no {TEST_PYTHON}: {SETUP_HINT}")
    if name.startswith("user") and RUNNING_AS_ROOT:
        try:
            account = pwd.getpwnam(USER)
        except KeyError:
            pytest.fail(f"no account {USER!r}: {SETUP_HINT}")
        if not user_can_grade(USER, python):
            pytest.fail(f"{USER} cannot run {python} with torch: {SETUP_HINT}")
        user, uid = USER, account.pw_uid
    else:
        user, uid = pwd.getpwuid(os.geteuid()).pw_name, os.geteuid()
    token = secrets.token_hex(4)
    # Sticky and world-writable, like /tmp: every uid may create entries, none may move another's.
    workspace = Path(tempfile.mkdtemp(prefix=f"hostile-{name}-", dir="/tmp"))
    workspace.chmod(0o1777)
    kit = workspace / "kit"
    make_kit_copy(kit, clean)
    if name.endswith("-basic"):
        prober = kit / "grader" / "sandbox" / "host.py"
        assert NAMESPACE_MODES in prober.read_text(), "the host no longer probes namespace modes as this test expects"
        prober.write_text(prober.read_text().replace(NAMESPACE_MODES, "for candidate in ():"))
    shared = workspace / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    found = Mode(name, user, uid, token, workspace, kit, shared, free_port(), python)
    yield found
    files, ipc, _ = snapshot(found)
    remove_leftovers(found, [path for path in files if "hostile" in path], [])
    if not os.environ.get("HOSTILE_KEEP"):  # HOSTILE_KEEP=1 keeps the class folders and OUTs to look at
        shutil.rmtree(workspace, ignore_errors=True)


def grade_class(mode, run_name, members, bases, time_limit=TIME_LIMIT, jobs=4, listen=False, keep_leftovers=False):
    """Grade `members` ({name: Attack or None}) as one class folder; return the Run. What the students left
    is removed afterwards, unless `keep_leftovers` (a later run is to try reading it)."""
    kept = os.environ.get("HOSTILE_REUSE")  # a workspace kept by HOSTILE_KEEP=1: read its runs, grade nothing
    if kept:
        saved = json.loads((Path(kept) / f"report-{run_name}.json").read_text())
        return Run(mode, run_name, members, Path(saved["out"]), saved["report"], saved["new_files"], saved["new_ipc"],
                   {int(uid): count for uid, count in saved["new_keys"].items()}, saved["listened"])
    folder = mode.workspace / f"class-{run_name}"
    folder.mkdir()
    fill = {"TOKEN": mode.token, "PORT": mode.port, "SHARED": mode.shared, "KEYSEED": int(mode.token, 16) % 100000 * 8,
            "STEP_SLEEP": time_limit - 0.5}
    for name, attack in members.items():
        (folder / f"{name}.py").write_text(bases["clean"] if attack is None else submission(attack, bases, fill))
    folder.chmod(0o755)
    roster = mode.workspace / f"roster-{run_name}.csv"
    roster.write_text("Student,ID\n" + "".join(f"{ROSTER_NAME} {i},{name}\n" for i, name in enumerate(members)))
    roster.chmod(0o644)
    out = mode.workspace / f"out-{run_name}"
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(mode.workspace),
           "KIT_TEST_LMS_TOKEN": f"lms-token-{mode.token}"}  # an instructor's secret, planted
    grader = [mode.python, "-m", "grader", "grade", str(folder), "--out", str(out), "--jobs", str(jobs),
              "--time-limit", str(time_limit), "--memory-limit", MEMORY_LIMIT, "--roster", str(roster)]
    if mode.user != pwd.getpwuid(os.geteuid()).pw_name:
        command = [shutil.which("runuser"), "-u", mode.user, "--", "env", *(f"{key}={value}" for key, value in env.items()),
                   *grader]
    else:
        command = grader
    before = snapshot(mode)
    listener = Listener(mode.port, mode.token) if listen else None
    spec = {"command": command, "cwd": str(mode.kit), "env": env, "timeout": 400, "uids": mode.watched_uids,
            "kit": str(mode.kit)}
    try:
        done = subprocess.run([sys.executable, "-c", WRAPPER, json.dumps(spec)], capture_output=True, text=True,
                              timeout=600)
    finally:
        if listener:
            time.sleep(0.2)
            listener.close()
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    after = snapshot(mode)
    new_files = sorted(after[0] - before[0])
    new_ipc = sorted(after[1] - before[1])
    new_keys = {uid: count - before[2].get(uid, 0) for uid, count in after[2].items() if count > before[2].get(uid, 0)}
    if not keep_leftovers:
        remove_leftovers(mode, new_files, new_ipc)
    return Run(mode, run_name, members, out, report, new_files, new_ipc, new_keys,
               listener.received if listener else [])


def members_of(run_name, honest=HONEST):
    members = {name: None for name in honest}
    members.update({name: attack for name, attack in ATTACKS.items() if attack.run == run_name})
    return members


@pytest.fixture(scope="module")
def canary(mode):
    """A file of the grader's user in /dev/shm that an attack asks the resource tracker to unlink."""
    path = Path(f"/dev/shm/hostile-canary-{mode.token}")
    path.write_text("still here")
    if RUNNING_AS_ROOT and mode.uid != 0:
        os.chown(path, mode.uid, -1)
    yield path
    with contextlib.suppress(OSError):
        path.unlink()


@pytest.fixture(scope="module")
def runs(mode, bases, canary):
    """The class runs of one mode, graded once: `main`, then `later` (which reads what `main` left),
    `pressure` (attacks on classmates graded at the same time) and `disruptive` (attacks that could
    end a whole run, with one honest classmate)."""
    found = {"main": grade_class(mode, "main", members_of("main"), bases, listen=True, keep_leftovers=True)}
    found["later"] = grade_class(mode, "later", members_of("later", HONEST[:1]), bases)
    remove_leftovers(mode, found["main"].new_files, found["main"].new_ipc)
    found["pressure"] = grade_class(mode, "pressure", members_of("pressure", HONEST + ("honest_bob",)), bases,
                                    time_limit=PRESSURE_TIME_LIMIT)
    found["disruptive"] = grade_class(mode, "disruptive", members_of("disruptive", HONEST[:1]), bases, jobs=2)
    print(f"\n{mode.name}: " + ", ".join(f"{name} {run.report['seconds']:.1f}s" for name, run in found.items()))
    if os.environ.get("HOSTILE_KEEP"):
        for name, run in found.items():
            (mode.workspace / f"report-{run.name}.json").write_text(json.dumps(
                dataclasses.asdict(run) | {"mode": None, "out": str(run.out), "members": list(run.members),
                                           "listened": [repr(item) for item in run.listened]}, indent=1, default=str))
    return found


def run_of(attack):
    return attack.run


# --------------------------------------------------------------------------- every run

RUN_NAMES = ["main", "later", "pressure", "disruptive"]


@pytest.mark.parametrize("run_name", RUN_NAMES)
def test_a_class_run_always_ends_with_grades_csv(run_name, runs, mode, request):
    apply_waits(request, run_name, mode.name, "grades")
    run = runs[run_name]
    assert run.failure() is None, run.failure()
    rows = {row.split(",")[0] for row in run.grades().splitlines()[1:]}
    assert rows == set(run.members), rows ^ set(run.members)


@pytest.mark.parametrize("run_name", RUN_NAMES)
def test_honest_classmates_graded_beside_the_attacks_keep_full_marks(run_name, runs, mode, request):
    apply_waits(request, run_name, mode.name, "honest")
    run = runs[run_name]
    for name in run.members:
        if run.members[name] is None:
            results = run.results(name)
            assert results is not None, f"{name} has no results: {run.failure()}"
            lost = [(test["name"], test["output"][:300]) for test in results["tests"]
                    if test["score"] < test["max_score"]]
            assert results["score"] == pytest.approx(TOTAL_POINTS), (name, lost)


@pytest.mark.parametrize("run_name", RUN_NAMES)
def test_nothing_the_students_started_is_still_running(run_name, runs, mode, request):
    apply_waits(request, run_name, mode.name, "running")
    leftovers = runs[run_name].report["leftovers"]
    assert not leftovers, leftovers


@pytest.mark.parametrize("run_name", RUN_NAMES)
def test_nothing_the_students_wrote_is_left(run_name, runs, mode, request):
    apply_waits(request, run_name, mode.name, "left")
    run = runs[run_name]
    assert not run.new_files, run.new_files[:20]
    assert not run.new_ipc, run.new_ipc
    assert not run.new_keys, run.new_keys


# --------------------------------------------------------------------------- every attack

@pytest.mark.parametrize("attack_name", sorted(ATTACKS))
def test_no_attack_scores_above_its_base_graded_honestly(attack_name, runs, mode, honest_scores, suite, request):
    apply_waits(request, attack_name, mode.name, "score")
    attack = ATTACKS[attack_name]
    run = runs[run_of(attack)]
    results = run.results(attack_name)
    assert results is not None, f"no results for {attack_name}: {run.failure()}"
    # A stub that returns the chapter's printouts earns the printout checks, and only them: they are
    # the one thing such a stub can pass, so they weigh little (tests/public: BOOK_WEIGHT).
    printouts = sum(test.points for test in suite if "chapter" in test.name)
    assert printouts <= 0.03 * TOTAL_POINTS, f"the printout checks weigh {printouts:g} points"
    allowed = honest_scores[attack.base] + (printouts if attack_name == "c7_printouts" else 0.0)
    gained = {test["name"]: test["output"][:200] for test in results["tests"] if test["score"] > 0} \
        if results["score"] > allowed + 1e-3 else {}
    assert results["score"] <= allowed + 1e-3, (results["score"], allowed, gained)


def visible_texts(results):
    """What a student reads at once: the top-level output, the load problems and the visible checks."""
    texts = [results.get("output", "")] + list((results.get("extra_data") or {}).get("problems", []))
    texts += [test.get("output", "") for test in results["tests"] if test.get("visibility") == "visible"]
    return texts


def test_no_other_students_name_reaches_an_attacker(runs, mode, request):
    apply_waits(request, "c1_names", mode.name, "evidence")
    run = runs["main"]
    text = run.text("c1_names")
    assert "classmates" in text, "c1_names never ran"
    others = [name for name in run.members if name != "c1_names" and name in text] + \
        ([ROSTER_NAME] if ROSTER_NAME in text else [])
    assert not others, others


def test_hidden_requests_never_reach_what_students_read_first(runs, mode, hidden_digests, request):
    apply_waits(request, "c3_visible", mode.name, "evidence")
    main, later = runs["main"], runs["later"]
    leaked = {}
    for run, name in ((main, "c3_stash_requests"), (main, "c3_next_step"), (later, "c3_stash_reader")):
        results = run.results(name)
        assert results is not None, f"no results for {name}: {run.failure()}"
        found = {digest for text in visible_texts(results) for digest in re.findall(r"LEAK[0-9a-f]{10}", text)}
        if found & hidden_digests:
            leaked[name] = sorted(found & hidden_digests)[:5]
    assert not leaked, leaked
    # The attack did raise its log in the hidden checks; their outputs (shown once grades are published) say that
    # it raised, and no longer what it said (red team 2: the hidden inputs reached the student there).
    hidden_outputs = " ".join(test["output"] for test in main.results("c3_next_step")["tests"]
                              if test["visibility"] != "visible")
    assert "a hidden check shows neither your error's message" in hidden_outputs, "c3_next_step never raised"
    assert not set(re.findall(r"LEAK[0-9a-f]{10}", hidden_outputs)) & hidden_digests


def test_nothing_reaches_a_listener_on_the_machine(runs, mode, request):
    apply_waits(request, "c3_network", mode.name, "evidence")
    run = runs["main"]
    assert "LEAK" not in json.dumps([chunk.decode(errors="replace") for chunk in run.listened])
    assert not run.listened, run.listened[:3]


def test_inherited_descriptors_reach_no_helper_of_the_judge(runs, mode, canary, request):
    apply_waits(request, "c4_fd_poke", mode.name, "evidence")
    run = runs["disruptive"]
    assert "poked" in run.text("c4_fd_poke"), "c4_fd_poke never ran"
    assert canary.exists(), "the resource tracker unlinked a file of the grader's user on a student's request"


def test_a_flooded_pipe_does_not_flood_the_grader(runs, mode, request):
    apply_waits(request, "c4_fd_flood", mode.name, "evidence")
    run = runs["disruptive"]
    assert run.report["err"][0] < 200_000, f"{run.report['err'][0]} bytes on the grader's stderr"


def test_the_fork_server_runs_nothing_for_a_student(runs, mode, request):
    apply_waits(request, "c4_forkserver_hijack", mode.name, "evidence")
    escaped = sorted(path.name for path in mode.shared.glob("hijacked-*"))
    assert not escaped, escaped


def test_memory_is_capped_per_submission(runs, mode, request):
    apply_waits(request, "c5_fork_memory", mode.name, "evidence")
    text = runs["pressure"].text("c5_fork_memory")
    held = re.findall(r"HELD (\d+) x (\d+) MiB", text)
    assert held or "limit" in text, "c5_fork_memory never reported"
    most = max((int(count) * int(size) for count, size in held), default=0)
    assert most <= 256 + 64, f"the submission held {most} MiB at once under a 256 MiB cap"


def test_processes_are_capped_per_submission(runs, mode, request):
    apply_waits(request, "c5_fork_bomb", mode.name, "evidence")
    text = runs["pressure"].text("c5_fork_bomb")
    counts = [(int(forked), int(threads)) for forked, threads in re.findall(r"FORKED (\d+) processes and THREADS (\d+)", text)]
    assert counts or "limit" in text, "c5_fork_bomb never reported"
    most = max((forked + threads for forked, threads in counts), default=0)
    assert most <= 128, f"one submission started {most} processes and threads"


def test_forged_answers_cost_the_judge_no_more_than_honest_ones(runs, mode, request):
    apply_waits(request, "c6_decode", mode.name, "evidence")
    run = runs["main"]
    for name in ("c6_repeated_blob", "c6_slow_decode"):
        results = run.results(name)
        assert results is not None, f"no results for {name}: {run.failure()}"
        assert results["extra_data"]["seconds"] < 60, (name, results["extra_data"]["seconds"])
    assert run.report["peak_rss"] < 1.5 * 2**30, f"a judge held {run.report['peak_rss'] / 2**30:.2f} GiB"


def test_no_secret_of_the_instructor_reaches_a_student(runs, mode, request):
    apply_waits(request, "c8_environment", mode.name, "evidence")
    run = runs["main"]
    secret = f"lms-token-{mode.token}"
    assert "secrets" in run.text("c8_environment"), "c8_environment never ran"
    found = [path.name for path in run.out.rglob("*") if path.is_file() and secret in
             path.read_text(encoding="utf-8", errors="replace")]
    found += ["the grader's output"] if secret in run.report["out"][1] + run.report["err"][1] else []
    assert not found, found


def test_the_judges_memory_is_out_of_reach(runs, mode, request):
    apply_waits(request, "x_judge_memory", mode.name, "evidence")
    text = runs["main"].text("x_judge_memory")
    assert "judge memory" in text, "x_judge_memory never ran"
    assert f"lms-token-{mode.token}" not in text and "def test_" not in text, text[:500]


def test_no_figure_of_the_machine_reaches_a_student(runs, mode, request):
    """A second red team (issue 26) put the machine's disk and memory sizes (statvfs on the view's files and
    devices) and its uptime (CLOCK_BOOTTIME, CLOCK_MONOTONIC, times(), /proc/self/stat) into feedback."""
    statfs = runs["main"].text("r_statfs_figures")
    assert "RTEAM2-STATFS" in statfs, "r_statfs_figures never ran"
    assert "MiB total" not in statfs, statfs[:1500]
    apply_waits(request, "r_uptime_clocks", mode.name, "evidence")
    uptime = runs["main"].text("r_uptime_clocks")
    assert "RTEAM2-UPTIME" in uptime, "r_uptime_clocks never ran"
    told = [float(value) for value in re.findall(r"(?:uptime|monotonic|times\(\)|started) (-?\d+) s", uptime)]
    assert told and max(told) < 600, uptime[:1500]


def test_no_kernel_attack_surface_is_open(runs, mode, request):
    apply_waits(request, "c9_namespaces", mode.name, "evidence")
    text = runs["main"].text("c9_namespaces")
    probes = set(re.findall(r"(NNP=\d|USERNS=\w+|MOUNT=\w+|PTRACE=\w+)", text))
    assert probes, "c9_namespaces never reported"
    assert probes <= {"NNP=1", "USERNS=refused", "MOUNT=refused", "PTRACE=refused"}, sorted(probes)


# The most of each kernel allowance one submission may take (what a k_* attack reports as "ALLOWANCE kind N"):
# none of what the filter refuses; memory held through descriptors within the cap and its headroom; whole-file
# locks and event descriptors only as many as descriptors allow (docs/sandbox.md: "Kernel allowances").
ALLOWANCE_BOUNDS = {"aio": 0, "inotify": 0, "epoll": 0, "mqueue": 0, "locks": 0, "kernel": 0, "ptys": 0,
                    "signals": 64 + 64, "sysvmsg": 16 * 16384, "memory": 256 + 64, "flocks": 8 * 128,
                    "eventfd": 2 * 128}
ALLOWANCE_ATTACKS = sorted(name for name, attack in ATTACKS.items() if attack.weakness == "k"
                           and name.startswith(("k_", "r_")))  # r_: the held-out red team of issue 26


@pytest.mark.parametrize("attack_name", ALLOWANCE_ATTACKS)
def test_no_kernel_allowance_of_the_user_or_the_machine_is_taken(attack_name, runs, mode, request):
    apply_waits(request, attack_name, mode.name, "allowance")
    run = runs[ATTACKS[attack_name].run]
    text = run.text(attack_name)
    taken = re.findall(r"ALLOWANCE (\w+) (\d+)", text)
    assert taken or "limit" in text, f"{attack_name} never reported: {text[:1500]}"  # (or a limit stopped it)
    over = [(kind, int(count), ALLOWANCE_BOUNDS[kind]) for kind, count in taken if int(count) > ALLOWANCE_BOUNDS[kind]]
    assert not over, f"{attack_name} took (kind, count, bound): {over}"


def test_out_is_the_graders_and_keeps_its_files(runs, mode, request):
    apply_waits(request, "c2_out_squatter", mode.name, "evidence")
    run = runs["disruptive"]
    assert run.failure() is None, run.failure()
    owner = run.out.stat().st_uid
    assert owner == mode.uid, f"OUT belongs to uid {owner}"
    strangers = [str(path) for path in [run.out, *run.out.rglob("*")]
                 if path.lstat().st_uid != mode.uid or (path.is_dir() and path.name.endswith((".csv", ".json")))]
    assert not strangers, strangers


# --------------------------------------------------------------------------- through the Gradescope zip

# Attacks that make sense inside Gradescope's container (one submission, graded as root), combined
# into three submissions: each snippet runs at load time, one after the other.
SINKS = {
    "sink_stub": ("stub", ["c1_classmates", "c1_names", "c8_checkout", "c8_environment", "x_judge_memory",
                           "c4_forkserver_hijack", "c7_lying_reports", "r_deep_litter", "r_gradescope_files"]),
    "sink_buggy": ("buggy", ["c3_next_step", "c3_network", "c9_namespaces", "c4_fd_poke"]),
    "sink_clean": ("clean", ["c2_litter", "c2_symlinks_writer", "c9_sysv_writer", "c9_keyring_writer"]),
}


@pytest.fixture(scope="module", params=["gradescope", "gradescope-basic"])
def gradescope_runs(request, bases, clean, tmp_path_factory):
    """Each sink through dist/gradescope/autograder.zip's run_autograder, in a temporary /autograder: as the
    autograder runs where namespaces can be had, and where they cannot (Docker's default seccomp profile, no
    CAP_SYS_ADMIN: the source's worker is told to try none, as the basic modes above)."""
    if not RUNNING_AS_ROOT:
        pytest.skip("Gradescope runs the autograder as root; so must this test")
    from grader.integrations import gradescope

    archive = gradescope.build(tmp_path_factory.mktemp("dist"))[0]
    token = secrets.token_hex(4)
    workspace = Path(tempfile.mkdtemp(prefix="hostile-gradescope-", dir="/tmp"))
    workspace.chmod(0o1777)
    mode = Mode("gradescope", "root", 0, token, workspace, workspace, workspace / "shared", free_port())
    mode.shared.mkdir()
    mode.shared.chmod(0o777)
    fill = {"TOKEN": token, "PORT": mode.port, "SHARED": mode.shared, "KEYSEED": int(token, 16) % 100000 * 8,
            "STEP_SLEEP": 1}
    found = {}
    listener = Listener(mode.port, token)
    try:
        for name, (base, parts) in SINKS.items():
            text = bases[base] + ("\n\n" + DIGESTS if base == "buggy" else "")
            for part in parts:
                text += "\n\n" + submission(dataclasses.replace(ATTACKS[part], base="none", weakness="-"),
                                            {"none": ""}, fill)
            root = workspace / name
            (root / "submission").mkdir(parents=True)
            (root / "submission" / "attention.py").write_text(text)
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(root / "source")
            if request.param.endswith("-basic"):
                prober = root / "source" / "grader" / "sandbox" / "host.py"
                assert NAMESPACE_MODES in prober.read_text(), "the host no longer probes namespace modes as expected"
                prober.write_text(prober.read_text().replace(NAMESPACE_MODES, "for candidate in ():"))
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/root",
                   "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable,
                   "AUTOGRADER_TIME_LIMIT": str(TIME_LIMIT), "KIT_TEST_LMS_TOKEN": f"lms-token-{token}"}
            before = snapshot(mode)
            spec = {"command": ["bash", str(root / "source" / "run_autograder")], "cwd": str(root), "env": env,
                    "timeout": 300, "uids": mode.watched_uids, "kit": str(root)}
            done = subprocess.run([sys.executable, "-c", WRAPPER, json.dumps(spec)], capture_output=True, text=True,
                                  timeout=400)
            assert done.returncode == 0, done.stderr[-3000:]
            after = snapshot(mode)
            results = root / "results" / "results.json"
            found[name] = {"report": json.loads(done.stdout.strip().splitlines()[-1]),
                           "results": json.loads(results.read_text()) if results.is_file() else None,
                           "text": results.read_text(errors="replace") if results.is_file() else "",
                           "new": sorted(after[0] - before[0]) + sorted(after[1] - before[1])}
            remove_leftovers(mode, after[0] - before[0], after[1] - before[1])
    finally:
        listener.close()
    found["listened"] = listener.received
    found["token"] = token
    found["shared"] = mode.shared
    found["mode"] = request.param
    yield found
    shutil.rmtree(workspace, ignore_errors=True)


@pytest.mark.parametrize("sink", sorted(SINKS))
def test_gradescope_zip_contains_every_attack(sink, gradescope_runs, honest_scores, hidden_digests, request):
    apply_waits(request, sink, gradescope_runs["mode"], "evidence")
    run = gradescope_runs[sink]
    results = run["results"]
    assert run["report"]["code"] == 0 and results is not None, run["report"]["err"][1][-3000:]
    graded_in = results["extra_data"]["sandbox"].get("mode")
    assert (graded_in == "basic") == gradescope_runs["mode"].endswith("-basic"), graded_in
    base = SINKS[sink][0]
    assert results["score"] <= honest_scores[base] + 1e-3, (results["score"], honest_scores[base])
    if base == "clean":
        assert results["score"] == pytest.approx(TOTAL_POINTS)
    assert not run["report"]["leftovers"], run["report"]["leftovers"]
    assert not run["new"], run["new"]
    text = run["text"]
    ran = {"sink_stub": ["classmates", "secrets", "judge memory"], "sink_buggy": ["probe: NNP", "poked"],
           "sink_clean": []}[sink]
    assert all(word in text for word in ran), f"an attack of {sink} never ran: {[w for w in ran if w not in text]}"
    assert f"lms-token-{gradescope_runs['token']}" not in text
    assert not {digest for shown in visible_texts(results) for digest in re.findall(r"LEAK[0-9a-f]{10}", shown)} \
        & hidden_digests
    assert not set(re.findall(r"(NNP=0|USERNS=OK|MOUNT=OK|PTRACE=OK)", text)), text[:2000]
    assert not list(gradescope_runs["shared"].glob("hijacked-*"))
    if sink == "sink_buggy":
        assert not gradescope_runs["listened"], gradescope_runs["listened"][:3]
