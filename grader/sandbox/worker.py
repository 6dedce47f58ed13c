"""A sandboxed process that runs one student's code, one step after another.

Workers are forked from a warm fork server that has imported torch but never
touched student code, so a worker starts in milliseconds. Each worker:
starts its own process group, becomes a child subreaper (see `processes`),
reads the submission, drops to an unprivileged uid of its own when the judge
runs as root (so it can read neither the hidden tests nor the solutions and
cannot write results), caps its memory, silences stdout/stderr (prints cannot
reach the protocol), loads the submission's definitions and then answers
requests until told to stop or killed. Nothing here judges: the judge only
reads plain data back. CUDA is first touched inside the worker, never in the
fork server, so GPU grading works with forked workers.
"""

import gc
import math
import multiprocessing
import os
import resource
import select
import signal
import stat
import sys
import threading
import time
import types
from pathlib import Path

import torch  # noqa: F401 - preloaded in the fork server so workers start warm

from grader.paths import ROOT
from grader.sandbox import processes
from grader.sandbox.limits import Limit
from grader.check import wire
from grader.check.loader import SubmissionError, load_definitions, read_chunks
from grader.check.session import Session, StandInHead
from grader.check.student import StudentUnavailable

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
WATCH_INTERVAL = 0.1  # seconds between memory checks while waiting for an answer
_CONTEXT = None
_LIVE_WORKERS = set()  # pids of workers the judge is using; guarded by _START_LOCK
_START_LOCK = threading.Lock()
UIDS = processes.UidPool()
_PREPARED = False
# What student code must not read when it runs under its own uid: hidden tests and
# the bug catalogue, the solutions, and the sample class (which holds correct files).
SECRET_FOLDERS = ("tests", "solutions", "samples")


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
    gc.collect()


def context():
    """The fork-server context; the server imports torch once, before any fork."""
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(["grader.sandbox.forkserver"])
    return _CONTEXT


def _fork_server_pid():
    from multiprocessing import forkserver

    return getattr(forkserver._forkserver, "_forkserver_pid", None)


def prepare_isolation():
    """Once per judge, before the first worker runs under its own uid (the judge is root).

    Secrets become private to root. The interpreter must stay reachable: when
    Python lives in a folder other users cannot enter (/root/.pyenv), a worker
    could not import the standard library modules it had not loaded yet, so the
    folders on the way get traverse-only permission (o+x: enter, not list), and
    the judge says so."""
    global _PREPARED
    with _START_LOCK:
        if _PREPARED:
            return
        for name in SECRET_FOLDERS:
            folder = ROOT / name
            if folder.is_dir() and folder.stat().st_mode & 0o077:
                folder.chmod(0o700)
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


def _confine(device, memory_limit, cpu_seconds, uid):
    os.setsid()
    processes.become_subreaper()
    if uid is not None:
        os.chdir("/")
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    if not device.startswith("cuda"):
        # The cap counts memory beyond what the warm process already maps (torch's libraries).
        # CUDA reserves huge address ranges, so on GPUs the judge watches resident memory instead.
        limit = processes.memory_bytes("self", "VmSize") + memory_limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Student code has no file to write: writes fail (EFBIG) instead of forging results files.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    devnull = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(devnull, stream)
    os.close(devnull)
    torch.set_num_threads(1)


def worker_main(conn, path, device, memory_limit, cpu_seconds, uid):
    """Entry point of a worker process (runs in the child)."""
    send, receive, dumps, loads = conn.send_bytes, conn.recv_bytes, wire.dumps, wire.loads
    try:
        chunks = read_chunks(path)  # read while still privileged: the file may be in a private folder
    except SubmissionError as error:
        send(dumps({"ok": False, "fatal": str(error)}))
        return
    _confine(device, memory_limit, cpu_seconds, uid)
    try:
        if device.startswith("cuda"):
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        loaded = load_definitions(path, chunks=chunks)
    except SubmissionError as error:
        send(dumps({"ok": False, "fatal": str(error)}))
        return
    session = Session(loaded.module, device)
    send(dumps({"ok": True, "problems": loaded.problems}))
    while True:
        try:
            request = loads(receive())
        except (EOFError, OSError):
            return
        if request.get("op") == "stop":
            return
        send(dumps(session.handle(request)))


class WorkerTransport:
    """Judge-side handle on one worker; enforces the time and memory budgets on every answer.

    `begin_step(seconds)` gives the next step its own time budget; a worker that
    dies or runs out of time raises StudentUnavailable and stays dead."""

    def __init__(self, path, device="cpu", time_limit=10.0, memory_limit=2 << 30, cpu_seconds=None,
                 isolate_user=None):
        ctx = context()
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.uid = None
        if processes.running_as_root() if isolate_user is None else isolate_user:
            prepare_isolation()
            self.uid = UIDS.take()
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self.process = ctx.Process(
            target=worker_main,
            args=(child_conn, str(path), device, int(memory_limit), int(cpu_seconds or time_limit + 2), self.uid),
            daemon=True,
        )
        self.dead, self.limit = None, None
        self.poller = select.poll()  # one poll object per worker: a selector per answer costs more than the answer
        self.poller.register(self.conn.fileno(), select.POLLIN)
        with _START_LOCK:  # a sweep must never mistake a worker being started for a leftover
            self.process.start()  # the first start also starts the fork server: not the student's time
            _LIVE_WORKERS.add(self.process.pid)
        self.deadline = time.monotonic() + time_limit
        child_conn.close()
        self.baseline = processes.memory_bytes(self.process.pid, "VmRSS")
        hello = self._receive("loading your file")
        # The report comes from the student's process (json may be patched there): bounded, cleaned.
        fatal, problems = hello.get("fatal"), hello.get("problems")
        self.fatal = wire.clean_text(str(fatal), 600) if fatal else None
        self.problems = [wire.clean_text(str(p), 600) for p in (problems if isinstance(problems, list) else [])[:21]]

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

    def _wait(self, doing):
        """Wait for an answer within the deadline, watching the worker's resident memory."""
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self._stop(f"time limit: this step ran past its {self.time_limit:g} s budget while {doing} "
                           "(an infinite loop, or work that grows too fast?)", Limit.TIME)
            if self.poller.poll(math.ceil(1000 * min(remaining, WATCH_INTERVAL))):
                return  # an answer, or the worker's end closed (recv_bytes then says which)
            if processes.memory_bytes(self.process.pid, "VmRSS") - self.baseline > self.memory_limit:
                self._stop(f"memory limit: your code used more than {self.memory_limit / 2**30:.3g} GiB while "
                           f"{doing} (a tensor far larger than the inputs?)", Limit.MEMORY)

    def _receive(self, doing):
        self._wait(doing)
        try:
            raw = self.conn.recv_bytes(MAX_MESSAGE_BYTES)
            answer = wire.loads(raw)
            if not isinstance(answer, dict):
                raise ValueError("not an answer")
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
        pid = self.process.pid
        if pid is None or pid not in _LIVE_WORKERS:
            return
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

        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        with _START_LOCK:  # no worker may be starting while the fork server's children are swept
            _LIVE_WORKERS.discard(pid)
            processes.kill_until_gone(leftovers)
        self.process.join(2.0)
        self.conn.close()
        if self.uid is not None:
            UIDS.give_back(self.uid)
