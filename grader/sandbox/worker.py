"""A sealed process that runs one student's code, one step after another.

Workers are forked from a warm fork server that has imported torch but never
touched student code, so a worker starts in milliseconds. Each worker seals
itself first (`seal`: its own PID, mount, IPC, UTS, network and cgroup
namespaces, a read-only view of the interpreter only, a private /tmp, a private
uid as root, cgroup limits where the kernel offers them, no capabilities,
no_new_privs, seccomp, no descriptor but its connection, an emptied
environment), says so, then receives the submission's source over its
connection (it never reads the submission's folder), loads the definitions and
answers requests until told to stop or killed. Nothing here judges: the judge
only reads plain data back. CUDA is first touched inside the worker, never in
the fork server, so GPU grading works with forked workers.

What the machine allows is probed once per process (`protections`); where
namespaces or cgroups cannot be had, workers fall back to rlimits, a private uid
(as root) and the judge's watchdog, and the run says which protections were on.
The CLI's `preseal` makes each judge seal the next worker while the current one
is graded, so a submission does not wait for its sandbox.
"""

import dataclasses
import gc
import math
import os
import select
import signal
import stat
import sys
import threading
import time
import types
from dataclasses import dataclass
from pathlib import Path

import torch  # noqa: F401 - preloaded in the fork server so workers start warm

from grader import stopping
from grader.paths import ROOT
from grader.sandbox import cgroups, processes, seal, seccomp
from grader.sandbox.servers import _fork_server_pid, context
from grader.sandbox.limits import Limit
from grader.check import wire
from grader.check.loader import Chunk, SubmissionError, load_definitions, read_chunks
from grader.check.session import Session, StandInHead
from grader.check.student import StudentUnavailable

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
WATCH_INTERVAL = 0.1  # seconds between memory checks while waiting for an answer
SETUP_SECONDS = 30.0  # a worker that is not sealed by then is broken (not the student's time)
SEAL_ATTEMPTS = 3
PROCESS_LIMIT = 64  # processes and threads of one submission (cgroup pids, RLIMIT_NPROC)
CORES, CPU_SLACK = 1.5, 0.5  # without a cpu cgroup: CPU seconds a step may use per second, and on top
CGROUP_HEADROOM = {"cpu": 64 << 20, "cuda": 1 << 30}  # what the worker itself may add beyond the step's cap
STAGE_TIMINGS = False  # workers report how long each stage of their seal took (bench/bench.py)
_LIVE_WORKERS = set()  # pids of workers the judge is using; guarded by _START_LOCK
_START_LOCK = threading.Lock()
UIDS = processes.UidPool()
_PREPARED = False


def warm_up():
    """Run once, in the fork server, what every worker runs: torch's ops (their lazy initialisation:
    dispatch tables, allocator, RNG, kernels) and the grader's own request path (the interpreter
    specialises its bytecode as it runs). A forked worker then starts where the server left off
    instead of paying all of it again on pages it must first copy. Nothing of the solutions is
    used: workers inherit all that the server holds."""
    torch.set_num_threads(1)
    with torch.no_grad():
        torch.manual_seed(0)
        linear = torch.nn.Linear(3, 2, bias=True)
        x = torch.rand(2, 4, 3) + torch.randn(2, 4, 3)
        scores = linear(x) @ linear(x).transpose(1, 2)
        mask = torch.triu(torch.ones(4, 4), diagonal=1).bool()
        scores = scores.masked_fill(mask, -torch.inf) / 2**0.5
        scores.masked_fill_(torch.tril(torch.ones(4, 4)) == 0, -1e9)
        weights = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), 0.5, training=True)
        (weights @ x).view(2, 4, 3).contiguous().reshape(8, 3).sum().item()
        torch.cat([x, x], dim=-1).unflatten(-1, (2, 3)).permute(0, 2, 1, 3).flatten(2)
        torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)
        torch.einsum("bnd,bmd->bnm", x, x).isfinite().all()
    session = Session(types.SimpleNamespace(CausalAttention=StandInHead, softmax=torch.softmax, __name__="warm_up"))
    head = {"op": "build", "name": "CausalAttention", "args": wire.encode([3, 4, 6, 0.5]), "kwargs": wire.encode({}),
            "seed": 1}
    x = wire.encode([torch.rand(2, 5, 3)])
    for request in (head, {"op": "forward", "handle": 1, "path": "", "args": x, "train": True, "seed": 2},
                    {"op": "load_weights", "handle": 1, "path": "",
                     "weights": wire.encode({"W_query.weight": torch.rand(4, 3)})},
                    {"op": "state", "handle": 1, "path": ""}, {"op": "describe", "handle": 1, "path": ""},
                    {"op": "call", "name": "softmax", "args": x, "kwargs": wire.encode({"dim": -1}), "seed": None},
                    {"op": "call", "name": "missing", "args": x, "kwargs": wire.encode({})}):
        wire.loads(wire.dumps(session.handle(wire.loads(wire.dumps(request)))))
    try:  # the filter's bytes, built once here for every worker of this server
        seccomp.program()
    except seccomp.SeccompUnavailable:
        pass
    gc.collect()


def _hide_checkout():
    """Without a root-built view, everything of the checkout (.git, dist/, tests/, solutions/, samples/, OUT
    folders, the grader's own code: the fork server imported all a worker runs) becomes private to its
    owner, but the folders on the way to Python (a virtual environment inside the checkout); the checkout
    itself can be entered, not listed."""
    keep = set()
    for place in (sys.prefix, sys.base_prefix, os.path.dirname(torch.__file__)):
        inside = os.path.relpath(os.path.realpath(place), ROOT)
        if not inside.startswith(".."):
            keep.add(inside.split(os.sep)[0])
    for entry in ROOT.iterdir():
        info = entry.lstat()
        if entry.name not in keep and not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o077:
            entry.chmod(stat.S_IMODE(info.st_mode) & 0o700)
    mode = stat.S_IMODE(ROOT.stat().st_mode)
    if mode & 0o044:
        ROOT.chmod(mode & ~0o044)


def prepare_isolation():
    """Once per judge, before the first worker runs under its own uid without a root-built view.

    Secrets become private to root. The interpreter must stay reachable: when
    Python lives in a folder other users cannot enter (/root/.pyenv), a worker
    could not import the standard library modules it had not loaded yet, so the
    folders on the way get traverse-only permission (o+x: enter, not list), and
    the judge says so. The root sandbox needs none of this: root builds the view."""
    global _PREPARED
    with _START_LOCK:
        if _PREPARED:
            return
        _hide_checkout()
        opened = []
        for place in {sys.base_prefix, sys.prefix, os.path.dirname(torch.__file__), str(ROOT)}:
            for folder in [Path(place), *Path(place).parents]:
                mode = folder.stat().st_mode
                if not mode & stat.S_IXOTH:
                    folder.chmod(mode | stat.S_IXOTH)
                    opened.append(str(folder))
        if opened:
            print(f"note: student code runs under its own uid and must reach Python; gave other users "
                  f"traverse-only access (o+x) to {', '.join(sorted(opened))}", file=sys.stderr)
        _PREPARED = True


# ------------------------------------------------------------------------ what this machine allows

# What the basic mode cannot close (docs/sandbox.md, "What holds where"): said in the run's summary.
BASIC_OPEN = ("open without namespaces: files of this machine that other users may read (outside the kit's "
              "checkout), other processes' command lines, the machine's figures, its pseudo-terminals; as an "
              "ordinary user also the grading user's own files and processes")


@dataclass(frozen=True)
class Protections:
    """What a worker runs under on this machine: the sandbox's mode, the protections on, and
    what is off and why (see seal.MODES, seal.REQUIRED)."""

    mode: str
    on: tuple
    off: tuple
    cgroups: tuple = ()  # controllers the kernel counts per submission

    @property
    def complete(self):
        """Everything `--require-sandbox` asks for."""
        return all(name in self.on for name in seal.REQUIRED)

    def missing(self):
        return [name for name in seal.REQUIRED if name not in self.on]

    def summary(self):
        limits = (f"kernel limits per submission: cgroup {'+'.join(self.cgroups)}" if self.cgroups else
                  "no writable cgroup: per-process rlimits and the judge's watchdog")
        if self.complete:
            return f"sandbox: {self.mode} mode, all protections on; {limits}"
        return (f"sandbox: DEGRADED ({self.mode} mode): off: {', '.join(self.missing())}"
                f" ({'; '.join(self.off)}); {limits}" + (f"; {BASIC_OPEN}" if self.mode == "basic" else ""))


_PROTECTIONS = None
_PROBE_LOCK = threading.Lock()


def protections():
    """What this machine allows, probed once per process (a throwaway sealed child per mode tried)."""
    global _PROTECTIONS
    with _PROBE_LOCK:
        if _PROTECTIONS is None:
            _PROTECTIONS = _probe()
        return _PROTECTIONS


def _probe():
    off = []
    try:
        bpf = seccomp.program()
    except seccomp.SeccompUnavailable as error:
        bpf = b""
        off.append(f"seccomp: {error}")
    root = processes.running_as_root()
    if root:
        UIDS.sweep_unused()  # what workers of earlier runs left in /tmp, /dev/shm... and SysV IPC
    uid = UIDS.take() if root else None
    mode, report = "basic", None
    try:
        for candidate in ("root", "userns") if root else ("userns",):
            if candidate == "userns" and root:
                prepare_isolation()  # the private uid builds this view itself: it must reach Python
            report, why = seal.probe(candidate, uid, bpf)
            if report is not None:
                mode = candidate
                break
            off.append(f"{candidate} namespaces: {why}")
        if report is None:
            report, why = seal.probe("basic", uid, bpf)
            if report is None:
                raise seal.SandboxError(f"even the basic sandbox fails here: {why}")
    finally:
        if uid is not None:
            UIDS.give_back(uid)
    group = cgroups.Cgroup.create(64 << 20, 8)
    controllers = tuple(sorted(group.limits)) if group is not None else ()
    if group is not None:
        group.remove()
    else:
        off.append("cgroups: none writable here (no root, no delegated cgroup)")
    on = [name for name in report["on"] if name not in {f"cgroup {key}" for key in cgroups.CONTROLLERS}]
    on += [f"cgroup {name}" for name in controllers]
    return Protections(mode, tuple(on), tuple(off + [o for o in report["off"] if o not in off]), controllers)


# ----------------------------------------------------------------------------------- in the worker

def worker_main(conn, spec):
    """Entry point of a worker process (runs in the child): seal, say so, load, answer."""
    send, receive, dumps, loads = conn.send_bytes, conn.recv_bytes, wire.dumps, wire.loads
    try:
        report = seal.seal(_policy(conn.fileno(), spec))
    except BaseException as error:  # noqa: BLE001 - the judge decides what a failed seal means
        try:
            send(dumps({"sealed": False, "error": f"{type(error).__name__}: {error}"[:500]}))
        except OSError:
            pass
        return
    torch.set_num_threads(1)
    # The worker inherits every orphan of its namespace (or, without one, of its tree: it is a subreaper):
    # reaped at once, they never count against the submission's process limit as zombies.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    send(dumps({"sealed": True, "report": report}))
    try:
        request = loads(receive())
    except (EOFError, OSError, ValueError):
        return
    if request.get("op") != "load":
        return
    # Said before any student code runs: a worker that dies before the judge reads this was lost by the
    # grader (a stopped run, the machine), never by the student, and its submission gets another worker.
    send(dumps({"received": True}))
    chunks = [Chunk(**{key: bytes(value).decode("utf-8") if isinstance(value, memoryview) else value
                       for key, value in fields.items()}) for fields in request["chunks"]]
    try:
        if spec["device"].startswith("cuda"):
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        loaded = load_definitions(request["name"], chunks=chunks)
    except SubmissionError as error:
        send(dumps({"ok": False, "fatal": str(error)}))
        return
    session = Session(loaded.module, spec["device"])
    send(dumps({"ok": True, "problems": loaded.problems}))
    while True:
        try:
            request = loads(receive())
        except (EOFError, OSError):
            return
        if request.get("op") == "stop":
            return
        send(dumps(session.handle(request)))


def _policy(keep_fd, spec):
    address_space = None
    if not spec["device"].startswith("cuda"):
        # The cap counts memory beyond what the warm process already maps (torch's libraries).
        # CUDA reserves huge address ranges, so on GPUs the judge watches resident memory instead.
        address_space = processes.memory_bytes("self", "VmSize") + spec["memory_limit"]
    env = seal.Policy(keep_fd).env
    if spec["device"].startswith("cuda"):  # which GPUs "cuda:N" counts among, read when CUDA starts
        env.update({key: os.environ[key] for key in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER") if key in os.environ})
    return seal.Policy(keep_fd=keep_fd, mode=spec["mode"], view=spec["view"], devices=spec["devices"], env=env,
                       uid=spec["uid"], cgroup=spec["cgroup"], bpf=spec["bpf"], address_space=address_space,
                       cpu_seconds=spec["cpu_seconds"], processes=PROCESS_LIMIT, why=spec["why"],
                       timings=spec["timings"])


# ------------------------------------------------------------------------------------ in the judge

@dataclass(frozen=True)
class _Config:
    device: str
    memory_limit: int
    cpu_seconds: int
    private_uid: bool


class SetupFailed(Exception):
    pass


class _Sealed:
    """One worker process from start to end: its uid, its cgroup, its keeper and its PID 1."""

    def __init__(self, config, mode=None):
        found = protections()
        self.config = config
        self.mode = mode or found.mode
        if not config.private_uid and self.mode == "root":
            self.mode = "userns"  # root asked to keep its uid (tests): only inside a user namespace
        self.uid = UIDS.take() if config.private_uid else None
        if self.uid is not None and self.mode in ("userns", "basic"):
            prepare_isolation()
        self.cgroup = None
        if found.cgroups:
            headroom = CGROUP_HEADROOM["cuda" if config.device.startswith("cuda") else "cpu"]
            self.cgroup = cgroups.Cgroup.create(config.memory_limit + headroom, PROCESS_LIMIT)
        nodes, folders = seal.cuda_devices() if config.device.startswith("cuda") else ((), ())
        try:
            bpf = seccomp.program(unix_sockets=config.device.startswith("cuda"), basic=self.mode == "basic")
        except seccomp.SeccompUnavailable:
            bpf = b""
        spec = {"mode": self.mode, "uid": self.uid, "cgroup": self.cgroup, "bpf": bpf, "device": config.device,
                "memory_limit": config.memory_limit, "cpu_seconds": config.cpu_seconds,
                "view": seal.view_paths(folders + (("/sys",) if nodes else ())),
                "devices": seal.Policy.devices + nodes,
                "why": "; ".join(found.off) if self.mode == "basic" else "", "timings": STAGE_TIMINGS}
        ctx = context()
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=worker_main, args=(child_conn, spec), daemon=True)
        self.started = time.monotonic()
        with _START_LOCK:  # a sweep must never mistake a worker being started for a leftover
            self.process.start()  # the first start also starts the fork server: not the student's time
            _LIVE_WORKERS.add(self.process.pid)
        child_conn.close()
        self.report, self.pid1, self.pidfd, self.baseline, self.closed = None, None, None, 0, False

    def wait_sealed(self, timeout=SETUP_SECONDS):
        """Block until the worker says it is sealed; its report. SetupFailed if it cannot be."""
        if self.report is not None:
            return self.report
        try:
            if not self.conn.poll(timeout):
                raise SetupFailed(f"not sealed after {timeout:g} s")
            message = wire.loads(self.conn.recv_bytes(1 << 20))
        except (EOFError, OSError, ValueError) as error:
            raise SetupFailed(f"the worker died while sealing itself ({type(error).__name__})") from None
        if not isinstance(message, dict) or message.get("sealed") is not True:
            raise SetupFailed(str((message or {}).get("error", "no report"))[:500])
        keeper = self.process.pid
        self.pid1 = keeper if self.mode == "basic" else next(iter(processes.children(keeper)), keeper)
        if self.pid1 != keeper:
            try:
                self.pidfd = os.pidfd_open(self.pid1)
            except OSError:
                self.pidfd = None
        self.baseline = processes.memory_bytes(self.pid1, "VmRSS")
        self.report = message["report"]
        return self.report

    def alive(self):
        return not self.closed and self.process.exitcode is None

    def usage(self):
        """(memory the submission added, CPU seconds its live processes used) for the watchdog; each
        None where the kernel counts it itself (cgroup)."""
        memory_counted = self.cgroup is not None and "memory" in self.cgroup.limits and \
            not self.config.device.startswith("cuda")
        cpu_counted = self.cgroup is not None and "cpu" in self.cgroup.limits
        if memory_counted and cpu_counted:
            return None, None
        pids = processes.subtree(self.pid1)
        return (None if memory_counted else processes.resident_growth(pids, self.baseline),
                None if cpu_counted else processes.cpu_seconds(pids))

    def out_of_memory(self):
        return self.cgroup is not None and "memory" in self.cgroup.limits and self.cgroup.oom_kills() > 0

    def close(self):
        """Stop the worker and every process it started, wherever they went; idempotent."""
        pid = self.process.pid
        if self.closed or pid is None:
            return
        self.closed = True
        server = _fork_server_pid()

        def leftovers(table):
            """The worker's tree (it is a subreaper), its uid's processes, the fork server's orphans."""
            found = set(processes.descendants(pid, table))
            if pid in table:
                found.add(pid)
            for other, (parent, uid) in table.items():
                if (self.uid is not None and uid == self.uid) or (
                        parent == server and other not in _LIVE_WORKERS):
                    found.add(other)
            return sorted(found)

        if self.pidfd is not None and self._end_namespace():
            _reap(self)  # the keeper's end, the cgroups' removal and the uid's return: off the judge's path
            return
        self._sweep(leftovers)
        self._release()

    def _end_namespace(self):
        """SIGKILL to PID 1 (through its pidfd: never a recycled pid) and to the keeper. PID 1 exits only
        once the kernel has killed and reaped every other process of its namespace: True when it has."""
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        processes.kill([self.process.pid])
        try:
            waiting = select.poll()
            waiting.register(self.pidfd, select.POLLIN)
            return bool(waiting.poll(5000))  # readable once PID 1 has exited
        finally:
            os.close(self.pidfd)
            self.pidfd = None

    def _sweep(self, leftovers):
        pid = self.process.pid
        if self.mode == "basic":
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        processes.kill([pid])
        if self.cgroup is not None:
            self.cgroup.kill()
        with _START_LOCK:  # no worker may be starting while the fork server's children are swept
            _LIVE_WORKERS.discard(pid)
            processes.kill_until_gone(leftovers)

    def _finish(self):
        """In the reaper thread, once PID 1 and its namespace are gone: the rest of `close`."""
        if self.cgroup is not None:
            self.cgroup.kill()  # the keeper, if it is still exiting
        self.process.join(2.0)
        with _START_LOCK:
            _LIVE_WORKERS.discard(self.process.pid)
        self._release()

    def _release(self):
        self.process.join(2.0)
        self.conn.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.uid is not None:
            if self.mode == "basic":  # without a private /tmp and IPC namespace it may have left things
                processes.sweep_uid(self.uid)
            UIDS.give_back(self.uid)


# Pre-sealed workers: SPARES per configuration, sealed by a helper thread while submissions are graded.
SPARES = 2  # one per grading thread of a judge (two jobs per judge)
_SPARES = {}  # config -> [_Sealed]
_FILLING = set()  # configs a helper thread is sealing spares for
_SPARE_LOCK = threading.Lock()
_PRESEAL = False


def preseal(enabled=True):
    """Seal the next workers ahead of time (the CLI turns this on; tests grade without spares)."""
    global _PRESEAL
    _PRESEAL = enabled
    if not enabled:
        discard_spares()


def discard_spares():
    with _SPARE_LOCK:
        spares = [spare for waiting in _SPARES.values() for spare in waiting]
        _SPARES.clear()
    for spare in spares:
        spare.close()


def _refill(config):
    """Seal spares for `config` until there are SPARES of them (in a helper thread: off the grading path)."""
    try:
        while _PRESEAL:
            with _SPARE_LOCK:
                if len(_SPARES.get(config, ())) >= SPARES:
                    return
            spare = _Sealed(config)
            with _SPARE_LOCK:
                if _PRESEAL:
                    _SPARES.setdefault(config, []).append(spare)
                    spare = None
            if spare is not None:
                spare.close()
    except Exception:  # noqa: BLE001 - a spare is an optimisation: the grading path starts its own
        pass
    finally:
        with _SPARE_LOCK:
            _FILLING.discard(config)


def _acquire(config):
    """A sealed worker for `config` (a spare if one is ready) and the seconds the caller waited."""
    started = time.monotonic()
    with _SPARE_LOCK:
        waiting = _SPARES.get(config) or []
        worker = waiting.pop(0) if waiting else None
        refill = _PRESEAL and config not in _FILLING
        if refill:
            _FILLING.add(config)
    if refill:
        threading.Thread(target=_refill, args=(config,), daemon=True, name="sandbox-spares").start()
    if worker is not None and not worker.alive():
        worker.close()
        worker = None
    worker = worker or _Sealed(config)
    # Tries again in the same mode (a passing shortage: memory, pids, a slow machine), never in a weaker
    # one: what the run probed and reported holds for every submission, and no submission can make a later
    # one run with fewer protections. A worker that cannot be sealed costs its submission a regradable
    # zero (grader.cohort.bulk), never a grade taken without its sandbox.
    for attempt in range(SEAL_ATTEMPTS):
        try:
            worker.wait_sealed()
            return worker, time.monotonic() - started
        except SetupFailed as error:
            worker.close()
            if attempt == SEAL_ATTEMPTS - 1:
                discard_spares()
                raise seal.SandboxError(f"a worker could not seal itself ({worker.mode} mode, {SEAL_ATTEMPTS} "
                                        f"tries): {error}") from None
            time.sleep(0.5 * (attempt + 1))
            worker = _Sealed(config, mode=worker.mode)
    raise AssertionError("unreachable")


# Closed workers whose namespace is still being torn down: finished, in order, by one reaper thread.
_DYING = []
_REAPING = threading.Condition()
_REAPER = [None]


def _reap(worker):
    with _REAPING:
        _DYING.append(worker)
        if _REAPER[0] is None or not _REAPER[0].is_alive():  # (a forked judge inherits no thread)
            _REAPER[0] = threading.Thread(target=_reaper, daemon=True, name="sandbox-reaper")
            _REAPER[0].start()
        _REAPING.notify_all()


def _reaper():
    while True:
        with _REAPING:
            _REAPING.wait_for(lambda: _DYING)
            worker = _DYING[0]
        try:
            worker._finish()
        except Exception:  # noqa: BLE001 - one worker's cleanup must not stop the others'
            pass
        finally:
            with _REAPING:
                _DYING.pop(0)
                _REAPING.notify_all()


def shutdown():
    """Close the spares and finish every close under way (their cgroups removed, uids given back);
    at exit, and by a judge process before it ends (it skips the exit handlers)."""
    preseal(False)
    with _REAPING:
        _REAPING.wait_for(lambda: not _DYING, timeout=30)
    cgroups.sweep_stale()


def _forget_parent_state():
    """In a forked child (a judge): the parent's workers, spares, closes and locks are not its own. A lock
    held by one of the parent's threads at the fork (the reaper's, a spare sealer's) would otherwise stay
    held forever in the child, where that thread does not exist."""
    global _START_LOCK, _PROBE_LOCK, _SPARE_LOCK, _REAPING
    _START_LOCK, _PROBE_LOCK, _SPARE_LOCK = threading.Lock(), threading.Lock(), threading.Lock()
    _REAPING = threading.Condition()
    _REAPER[0] = None
    _DYING.clear()
    _LIVE_WORKERS.clear()
    _SPARES.clear()
    _FILLING.clear()
    UIDS.forget_after_fork()
    cgroups.forget_after_fork()


import atexit  # noqa: E402 - registered after the function it calls

atexit.register(shutdown)
os.register_at_fork(after_in_child=_forget_parent_state)


# Text from a worker that the student sees at once (its load problems): a few lines, each short.
MAX_PROBLEMS, MAX_PROBLEM_CHARS, MAX_PROBLEMS_CHARS = 21, 600, 6000


def capped_texts(texts):
    """A worker's list of texts, bounded in count, length and total length, cleaned for any output."""
    kept, left = [], MAX_PROBLEMS_CHARS
    for text in texts[:MAX_PROBLEMS]:
        if left <= 0:
            break
        text = wire.clean_text(str(text), min(MAX_PROBLEM_CHARS, left))
        kept.append(text)
        left -= len(text)
    return kept


class WorkerTransport:
    """Judge-side handle on one sealed worker; enforces the time and memory budgets on every answer.

    `begin_step(seconds)` gives the next step its own time budget; a worker that
    dies or runs out of time raises StudentUnavailable and stays dead. `protections`
    is the worker's own report of its sandbox, sent before any student code ran;
    `setup_seconds` how long this submission waited for it."""

    REQUIRE_SANDBOX = False  # the CLI's --require-sandbox: no worker without every protection

    def __init__(self, path, device="cpu", time_limit=10.0, memory_limit=2 << 30, cpu_seconds=None,
                 isolate_user=None):
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.dead, self.limit, self.worker = None, None, None
        self.fatal, self.problems, self.protections, self.setup_seconds = None, [], None, 0.0
        try:
            chunks = read_chunks(path)  # by the judge: the worker never sees the submission's folder
        except SubmissionError as error:
            self.fatal = wire.clean_text(str(error), 600)
            return
        private_uid = processes.running_as_root() if isolate_user is None else bool(isolate_user)
        config = _Config(device, int(memory_limit), int(cpu_seconds or time_limit + 2),
                         private_uid and processes.running_as_root())
        if self.REQUIRE_SANDBOX and not protections().complete:
            raise seal.SandboxError(protections().summary())
        fields = [{key: value.encode("utf-8") if key in ("source", "original") and isinstance(value, str) else value
                   for key, value in dataclasses.asdict(chunk).items()} for chunk in chunks]
        load = wire.dumps({"op": "load", "name": Path(path).name, "chunks": fields})
        for attempt in range(SEAL_ATTEMPTS):
            if self._hand_over(config, load, time_limit):
                break
            if attempt == SEAL_ATTEMPTS - 1:  # not the student's doing: a regradable zero (grader.cohort.bulk)
                raise seal.SandboxError(f"{SEAL_ATTEMPTS} workers in a row ended before the file reached them, "
                                        "before any of its code ran")
        hello = self._receive("loading your file")
        # The report comes from the student's process (json may be patched there): bounded, cleaned.
        fatal, problems = hello.get("fatal"), hello.get("problems")
        self.fatal = wire.clean_text(str(fatal), 600) if fatal else None
        self.problems = capped_texts(problems if isinstance(problems, list) else [])

    def _hand_over(self, config, load, time_limit):
        """A sealed worker, sent the file and sure to have received it (its receipt comes before any of the
        file's code runs): True. False when the worker ended before that, which no student code caused."""
        self.worker, waited = _acquire(config)
        self.setup_seconds += waited
        self.protections = self.worker.report
        self.process, self.conn, self.uid = self.worker.process, self.worker.conn, self.worker.uid
        self.poller = select.poll()  # one poll object per worker: a selector per answer costs more than the answer
        self.poller.register(self.conn.fileno(), select.POLLIN)
        self.deadline = time.monotonic() + time_limit
        try:
            self.conn.send_bytes(load)
            if self._receive("receiving your file").get("received") is True:
                return True
        except (StudentUnavailable, OSError):
            stopping.check()  # a stopped run: nothing to retry
        self.close()
        self.dead = self.limit = None
        return False

    def begin_step(self, seconds):
        self.time_limit = seconds
        self.deadline = time.monotonic() + seconds

    def send(self, request):
        if self.dead:
            raise StudentUnavailable(self.dead, self.limit)
        try:
            self.conn.send_bytes(wire.dumps(request))
        except (BrokenPipeError, OSError):
            self._fail("sending a request")
        return self._receive(request.get("name") or request.get("op"))

    def charge(self, doing):
        """Decoding an answer in the judge is the submission's time too: past the step's deadline, stop."""
        if not self.dead and time.monotonic() > self.deadline:
            self._stop(f"time limit: this step ran past its {self.time_limit:g} s budget while {doing} "
                       "(its answers were too large to read in time)", Limit.TIME)

    def _wait(self, doing):
        """Wait for an answer within the deadline, watching the submission's memory and CPU."""
        began, cpu_before = time.monotonic(), None
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self._stop(f"time limit: this step ran past its {self.time_limit:g} s budget while {doing} "
                           "(an infinite loop, or work that grows too fast?)", Limit.TIME)
            if self.poller.poll(math.ceil(1000 * min(remaining, WATCH_INTERVAL))):
                return  # an answer, or the worker's end closed (recv_bytes then says which)
            if stopping.requested():  # the run is being stopped: this submission is left for the next run
                self.close()
                stopping.check()
            memory, cpu = self.worker.usage()
            if (memory is not None and memory > self.memory_limit) or self.worker.out_of_memory():
                self._memory_limit(doing)
            if cpu is not None:
                # Without a cpu cgroup: a submission computing on more than one core at a time (processes
                # it started) takes classmates' time; its step stops.
                cpu_before = cpu if cpu_before is None else cpu_before
                if cpu - cpu_before > CORES * (time.monotonic() - began) + CPU_SLACK:
                    self._stop(f"CPU limit: your code computed on several cores at once while {doing} "
                               "(processes or threads of its own?); a submission gets one", Limit.CPU)

    def _memory_limit(self, doing):
        self._stop(f"memory limit: your code used more than {self.memory_limit / 2**30:.3g} GiB while "
                   f"{doing} (a tensor far larger than the inputs?)", Limit.MEMORY)

    def _receive(self, doing):
        self._wait(doing)
        try:
            raw = self.conn.recv_bytes(MAX_MESSAGE_BYTES)
            answer = wire.loads(raw)
            if not isinstance(answer, dict):
                raise ValueError("not an answer")
            self.charge(f"the grader read the answer of {doing}")
            return answer
        except (EOFError, OSError):
            self._fail(doing)
        except ValueError:
            self._stop("your code wrote garbage to the grader's channel; the step was stopped", Limit.CHANNEL)

    def _stop(self, reason, limit):
        self.close()
        self.dead, self.limit = reason, limit
        raise StudentUnavailable(reason, limit)

    def _fail(self, doing):
        self.process.join(1.0)
        code = self.process.exitcode
        # A worker that died as the run was being stopped (every process of the job signalled) is no verdict.
        stopping.after_death(-code if code is not None and code < 0 else None)
        if self.worker.out_of_memory():  # the kernel killed a process of the submission's cgroup
            self._memory_limit(doing)
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals.__members__.values() else str(-code)
            reason, limit = f"crashed (signal {name}) while {doing}", Limit.CRASH
            if -code == signal.SIGXCPU:
                reason, limit = f"used more than its CPU-time budget while {doing}", Limit.CPU
        else:
            reason = f"exited (exit code {code}) while {doing}: remove sys.exit/os._exit/quit from your code"
            limit = Limit.EXIT
        self._stop("your code's process " + reason, limit)

    def close(self):
        """Stop the worker and every process it started, wherever they went; idempotent."""
        if self.worker is not None:
            self.worker.close()
