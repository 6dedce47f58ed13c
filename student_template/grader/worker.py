"""A sandboxed process that runs one student's code for one step.

Workers are forked from a warm fork server that has imported torch but never
touched student code, so a worker starts in milliseconds. Each worker:
starts its own process group (so the judge can kill everything it spawned),
caps its memory, silences stdout/stderr (prints cannot reach the protocol),
loads the submission's definitions and then answers requests until told to
stop or killed. Nothing here judges: the judge only reads plain data back.
"""

import multiprocessing
import os
import resource
import signal
import time

import torch  # noqa: F401 - preloaded in the fork server so workers start warm

from . import wire
from .loader import SubmissionError, load_definitions
from .session import Session
from .student import StudentUnavailable

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_CONTEXT = None


def context():
    """The fork-server context; the server imports torch once, before any fork."""
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(["grader.worker"])
    return _CONTEXT


def _virtual_memory_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _confine(memory_limit, cpu_seconds):
    os.setsid()
    # The cap counts memory beyond what the warm process already maps (torch's libraries).
    limit = _virtual_memory_bytes() + memory_limit
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024 * 1024, 16 * 1024 * 1024))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    torch.set_num_threads(1)


def worker_main(conn, path, device, memory_limit, cpu_seconds):
    """Entry point of a worker process (runs in the child)."""
    send, receive, dumps, loads = conn.send_bytes, conn.recv_bytes, wire.dumps, wire.loads
    _confine(memory_limit, cpu_seconds)
    try:
        if device.startswith("cuda"):
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        loaded = load_definitions(path)
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
    """Judge-side handle on one worker; enforces the time budget on every answer."""

    def __init__(self, path, device="cpu", time_limit=10.0, memory_limit=2 << 30):
        ctx = context()
        self.time_limit = time_limit
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self.process = ctx.Process(
            target=worker_main,
            args=(child_conn, str(path), device, int(memory_limit), int(time_limit) + 2),
            daemon=True,
        )
        self.deadline = time.monotonic() + time_limit
        self.dead = None
        self.process.start()
        child_conn.close()
        hello = self._receive("loading your file")
        self.fatal = hello.get("fatal")
        self.problems = list(hello.get("problems") or [])

    def send(self, request):
        if self.dead:
            raise StudentUnavailable(self.dead)
        try:
            self.conn.send_bytes(wire.dumps(request))
        except (BrokenPipeError, OSError):
            self._fail("sending a request")
        return self._receive(request.get("name") or request.get("op"))

    def _receive(self, doing):
        remaining = self.deadline - time.monotonic()
        if remaining <= 0 or not self.conn.poll(remaining):
            self.close()
            self.dead = (f"time limit: this step ran past its {self.time_limit:g} s budget while {doing} "
                         "(an infinite loop, or work that grows too fast?)")
            raise StudentUnavailable(self.dead)
        try:
            raw = self.conn.recv_bytes(MAX_MESSAGE_BYTES)
            answer = wire.loads(raw)
            if not isinstance(answer, dict):
                raise ValueError("not an answer")
            return answer
        except (EOFError, OSError):
            self._fail(doing)
        except ValueError:
            self.close()
            self.dead = "your code wrote garbage to the grader's channel; the step was stopped"
            raise StudentUnavailable(self.dead) from None

    def _fail(self, doing):
        self.process.join(1.0)
        code = self.process.exitcode
        self.close()
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals.__members__.values() else str(-code)
            reason = f"crashed (signal {name}) while {doing}"
            if -code == signal.SIGXCPU:
                reason = f"used more than its CPU-time budget while {doing}"
        else:
            reason = f"exited (exit code {code}) while {doing}: remove sys.exit/os._exit/quit from your code"
        self.dead = "your code's process " + reason
        raise StudentUnavailable(self.dead)

    def close(self):
        """Stop the worker and everything it started (its whole process group)."""
        if self.process.pid is None:
            return
        try:
            if self.process.exitcode is None and not self.dead:
                self.conn.send_bytes(wire.dumps({"op": "stop"}))
        except OSError:
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.join(2.0)
        self.conn.close()
