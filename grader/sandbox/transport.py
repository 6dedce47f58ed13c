"""The judge's handle on one sealed worker (`WorkerTransport`): hands it the submission, sends requests,
and enforces the time and memory budgets on every answer.

The worker comes from the judge's `pool.WorkerPool` (a spare sealed ahead of time where the
run presealed one); see `entry` for the worker's own side and `sealed` for its life cycle.
"""

import dataclasses
import math
import select
import signal
import time
from pathlib import Path

from grader import stopping
from grader.check import wire
from grader.check.loader import SubmissionError, read_chunks
from grader.check.student import StudentUnavailable
from grader.sandbox import pool as pools
from grader.sandbox import gpu_memory, processes, seal
from grader.sandbox.limits import Limit, wait_credit
from grader.sandbox.pool import SEAL_ATTEMPTS
from grader.sandbox.entry import PROCESS_LIMIT_WITHOUT_MEMORY_CGROUP
from grader.sandbox.sealed import WorkerConfig

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
WATCH_INTERVAL = 0.1  # seconds between memory checks while waiting for an answer
CORES, CPU_SLACK = 1.5, 0.5  # without a cpu cgroup: CPU seconds a step may use per second, and on top

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

    def __init__(self, path, device="cpu", time_limit=10.0, memory_limit=2 << 30, cpu_seconds=None,
                 isolate_user=None, pool=None):
        self.pool = pool or pools.current()  # the judge's workers, spares and settings
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.dead, self.limit, self.worker = None, None, None
        self.fatal, self.problems, self.protections, self.setup_seconds = None, [], None, 0.0
        self.cpu_wait_base = self.cpu_wait_credited = self.cpu_used_base = self.step_began = 0.0  # _credit_cpu_wait
        try:
            chunks = read_chunks(path)  # by the judge: the worker never sees the submission's folder
        except SubmissionError as error:
            self.fatal = wire.clean_text(str(error), 600)
            return
        private_uid = processes.running_as_root() if isolate_user is None else bool(isolate_user)
        config = WorkerConfig(device, int(memory_limit), int(cpu_seconds or time_limit + 2),
                              private_uid and processes.running_as_root())
        self.pool.check_required()
        fields = [{key: value.encode("utf-8") if key in ("source", "original") and isinstance(value, str) else value
                   for key, value in dataclasses.asdict(chunk).items()} for chunk in chunks]
        load = wire.dumps(wire.request("load", name=Path(path).name, chunks=fields))
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
        self.worker, waited = self.pool.acquire(config)
        self.setup_seconds += waited
        self.protections = self.worker.report
        self.process, self.conn, self.uid = self.worker.process, self.worker.conn, self.worker.uid
        self.poller = select.poll()  # one poll object per worker: a selector per answer costs more than the answer
        self.poller.register(self.conn.fileno(), select.POLLIN)
        self._start_clock(time_limit)
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
        self._start_clock(seconds)

    def _start_clock(self, seconds):
        self.step_began = time.monotonic()
        self.deadline = self.step_began + seconds
        (self.cpu_wait_base, self.cpu_used_base), self.cpu_wait_credited = self._cpu_clock(), 0.0

    def _cpu_clock(self):
        """(seconds the submission's processes and this judge thread have waited for a CPU others held, CPU
        seconds the submission's processes have used)."""
        waited, used = self.worker.cpu_wait_and_use()
        return waited + processes.own_cpu_wait_seconds(), used

    def _credit_cpu_wait(self):
        """Move the deadline by the time the submission (or the judge reading it) waited for a CPU since its
        step began, not yet credited, at most MAX_CPU_WAIT_CREDIT × the limit in all: True if it moved."""
        waited, used = self._cpu_clock()
        # Only a wait for CPUs others held: the time the submission neither ran nor slept is at most the step's
        # time less the CPU its own processes used. A submission whose processes queue behind each other (14 busy
        # children, a red team's) has used that time itself, and earns nothing (before: 5x its budget).
        idle = time.monotonic() - self.step_began - (used - self.cpu_used_base)
        credit = wait_credit(min(waited - self.cpu_wait_base, max(0.0, idle)), self.cpu_wait_credited, self.time_limit)
        if not credit:
            return False
        self.deadline += credit
        self.cpu_wait_credited += credit
        return True

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
        if not self.dead and time.monotonic() > self.deadline and not (self._credit_cpu_wait() and
                                                                      time.monotonic() <= self.deadline):
            self._stop(f"time limit: this step ran past its {self.time_limit:g} s budget while {doing} "
                       "(its answers were too large to read in time)", Limit.TIME)

    def _wait(self, doing):
        """Wait for an answer within the deadline, watching the submission's memory and CPU."""
        began, cpu_before = time.monotonic(), None
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0 and self.poller.poll(0):
                return  # the answer came in time; the judge itself was late to look
            if remaining <= 0 and self._credit_cpu_wait():
                continue
            if remaining <= 0:
                self._stop(f"time limit: this step ran past its {self.time_limit:g} s budget while {doing} "
                           "(an infinite loop, or work that grows too fast?)", Limit.TIME)
            if self.poller.poll(math.ceil(1000 * min(remaining, WATCH_INTERVAL))):
                return  # an answer, or the worker's end closed (recv_bytes then says which)
            if stopping.requested():  # the run is being stopped: this submission is left for the next run
                self.close()
                stopping.check()
            memory, cpu, running, gpu = self.worker.usage()
            if (memory is not None and memory > self.memory_limit) or self.worker.out_of_memory():
                self._memory_limit(doing)
            if gpu is not None and gpu > self.memory_limit + gpu_memory.CONTEXT_ALLOWANCE:
                # The GPU's memory is shared by every worker graded on it: a step holding more than its share
                # stops at once, before its classmates' allocations fail (judging.judge grades those again).
                # The figure itself is not shown: how much memory it took is the student's code's to choose.
                self._stop(f"GPU memory limit: your code held more than {self.memory_limit / 2**30:.3g} GiB of the "
                           f"GPU's memory beside its CUDA context while {doing} (a tensor far larger than the "
                           "inputs?)", Limit.MEMORY)
            if running is not None and running > PROCESS_LIMIT_WITHOUT_MEMORY_CGROUP:
                # RLIMIT_NPROC alone counts every process of the user in the basic mode of an ordinary user
                self._stop(f"process limit: your code ran {running} processes at once while {doing}; a "
                           f"submission may run {PROCESS_LIMIT_WITHOUT_MEMORY_CGROUP} (it needs one)",
                           Limit.PROCESSES)
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

    def cpu_used(self):
        """CPU seconds the worker's processes have used since its fork (its seal and loading included), those they
        reaped too; 0 once it is closed. What grading cost the machine on the worker's side (make bench)."""
        return self.worker.cpu_used() if self.worker is not None and not self.worker.closed else 0.0

    def close(self):
        """Stop the worker and every process it started, wherever they went; idempotent."""
        if self.worker is not None:
            self.worker.close()
