"""Grade one submission: a sandboxed worker runs the student's code, step after step.

The judge (this process) holds the tests, the references and the verdicts;
the worker only runs student code and returns plain data. Each step has its
own time budget; a step whose worker hangs, crashes, exits or runs out of
memory fails on its own, and the next step gets a fresh worker.
"""

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from grader.check.loader import SubmissionError, read_chunks
from grader.judging.model import SubmissionResult, TestResult, zero_result
from grader.chapter import STEPS
from grader.check import public_inputs
from grader.check.student import Student, StudentUnavailable
from grader.check.suite import hidden_secret
from grader.check.runner import run_test
from grader.sandbox.limits import DEFAULTS, Limit, Limits
from grader.sandbox.transport import WorkerTransport

# The judge's tensors are tiny and it grades several submissions in threads while
# workers run beside it: torch's intra-op thread pool only adds contention (measured:
# softmax of a 6x6 took 4 ms with the default pool, microseconds with one thread).
torch.set_num_threads(1)

# torch's exception when the GPU's allocator gives up. A GPU's memory is shared by the workers graded on it, so a
# step that meets it is graded once more, on a fresh worker, after the watchdog's interval: a classmate's worker
# that held more than its share has been stopped by then (sandbox.gpu_memory).
GPU_OUT_OF_MEMORY = "OutOfMemoryError"
GPU_RETRY_WAIT = 1.0  # seconds


@dataclass(frozen=True)
class Options:
    device: str = "cpu"
    limits: Limits = DEFAULTS
    isolate_user: bool = None  # run student code under its own uid (default: when running as root)

    @classmethod
    def of(cls, device="cpu", isolate_user=None, **limits):
        """Options(limits=Limits(**limits)): `Options.of(step_seconds=3)`."""
        return cls(device, Limits(**limits), isolate_user)


def failure_limit(details):
    """The Limit a failed test hit, from its details (see check.runner.run_test), or None."""
    limit = details.pop("limit", None)
    return limit or (Limit.MEMORY if out_of_memory(details.get("error")) else None)


def out_of_memory(error):
    """Whether the student's own exception (plain data, see testing.details_of) is the allocator
    giving up: a memory limit, not a bug."""
    message = str((error or {}).get("message", ""))
    return (error or {}).get("type") in ("MemoryError", GPU_OUT_OF_MEMORY) or "can't allocate memory" in message \
        or "Cannot allocate memory" in message


def gpu_out_of_memory(error):
    """Whether the student's own exception (plain data) says the GPU had no memory left: torch's allocator, or
    CUDA itself (a context, cuBLAS's handle) when another process holds the GPU. A submission that says so of
    itself gains one more run of the step, no verdict."""
    message = str((error or {}).get("message", "")).lower()
    return (error or {}).get("type") == GPU_OUT_OF_MEMORY or "out of memory" in message or "alloc_failed" in message


class SubmissionWorker:
    """The worker of one submission: started on first use, replaced after a step kills it.

    A file whose loading itself hangs or crashes fails every step at once:
    loading is the same for every step, so retrying would only waste time."""

    def __init__(self, path, options):
        self.path = path
        self.options = options
        self.worker = None
        self.fatal = None
        self.fatal_limit = None  # the Limit behind `fatal`, if it was one
        self.problems = []
        # Load problems are shown to the student at once: only those of workers that never received a
        # hidden check's request are kept, so a worker cannot carry what a hidden check asked into them.
        self.keep_problems = True
        self.protections = None  # the first worker's own report of its sandbox, sent before student code ran
        self.setup_seconds = []  # how long each worker made this submission wait for its sandbox
        self.cpu_seconds = 0.0  # CPU its workers used, read as each closes (make bench's worker side)

    def student_for(self, seconds, planned=True, public_shift=0):
        """A Student for the next step with `seconds` to spend, or None (then `fatal` says why). `planned`: the
        Student may send its group's plan (check.student.Plans); `public_shift`: see check.public_inputs."""
        if self.fatal:
            return None
        if self.worker is not None and not self.worker.dead:
            self.worker.begin_step(seconds)
        else:
            self.close()
            try:
                self.worker = WorkerTransport(
                    self.path, self.options.device, seconds, self.options.limits.memory_bytes,
                    cpu_seconds=self.options.limits.cpu_seconds, isolate_user=self.options.isolate_user)
            except StudentUnavailable as error:
                self.worker, self.fatal, self.fatal_limit = None, str(error), error.limit
                return None
            if self.keep_problems:
                self.problems.extend(p for p in self.worker.problems if p not in self.problems)
            self.protections = self.protections or self.worker.protections
            self.setup_seconds.append(self.worker.setup_seconds)
            self.fatal = self.worker.fatal
            if self.fatal:
                return None
        return Student(self.worker, self.options.device, planned=planned, public_shift=public_shift)

    def close(self):
        if self.worker is not None:
            self.cpu_seconds += self.worker.cpu_used()
            self.worker.close()
            self.worker = None


def grade_step(sandbox, step_key, tests, seconds, planned=True, public_shift=0, retried=False):
    """Run the tests of one step against the submission's worker (its public checks' seeds moved by
    `public_shift`: see check.public_inputs); on a GPU, once more where the GPU's memory ran out."""
    student = sandbox.student_for(seconds, planned, public_shift)
    results = []
    for test in tests:
        details = {}
        if student is None:
            passed, message, limit = False, sandbox.fatal, sandbox.fatal_limit
        else:
            passed, message = run_test(test, student, details)
            limit = failure_limit(details)
        results.append(TestResult(test.name, step_key, test.points if passed else 0.0, test.points,
                                  message, test.visibility, details, limit))
    if student is not None and student.plan_lost:
        # The worker ended inside the plan sent ahead: graded again as the checks ask, on a fresh worker, so
        # that the checks before the request that ended it keep their points, as without a plan.
        return grade_step(sandbox, step_key, tests, seconds, planned=False, public_shift=public_shift,
                          retried=retried)
    if not retried and sandbox.options.device.startswith("cuda") and any(
            gpu_out_of_memory(result.details.get("error")) for result in results):
        # Its own tensors too large run out again, within its own cap (sandbox.entry), and keep that verdict.
        sandbox.close()
        time.sleep(GPU_RETRY_WAIT)
        return grade_step(sandbox, step_key, tests, seconds, planned, public_shift, retried=True)
    return results


def check_readable(path):
    """Fail fast, once, on a file that cannot be graded at all (empty, binary, bad notebook...)."""
    try:
        read_chunks(path)
        return None
    except SubmissionError as error:
        return str(error)
    except OSError as error:
        return f"{path}: cannot be read ({error.strerror})"


def grade_submission(path, name, tests, options):
    """Grade one file against all steps, within the per-step and per-submission time limits.

    Every step's public checks run first, then every step's hidden checks: all that a
    student sees at once (the public checks' outputs, the load problems) comes from
    workers that have not yet received any hidden check's request (its inputs, seeds and
    weights), so no worker can smuggle those into visible text. A step keeps one time
    budget for both of its parts; a step whose worker hit a limit in its public part fails
    its hidden part with the same message, as when both parts ran together."""
    started, judge_cpu = time.monotonic(), time.thread_time()
    result = SubmissionResult(name, str(path))
    unreadable = check_readable(path)
    if unreadable:
        return zero_result(name, path, tests, unreadable)
    sandbox = SubmissionWorker(path, options)
    shift = public_inputs.shift_for(Path(path).read_bytes(), hidden_secret(tests))
    verdicts = {}
    spent = {}  # seconds each step used in its public part
    credited = 0.0  # seconds the steps' clocks were moved for waits on a busy machine
    stopped = {}  # step key -> (message, limit) of a worker that hit a limit in the step's public part
    try:
        for public in (True, False):
            sandbox.keep_problems = public
            for step in STEPS:
                step_tests = [test for test in tests if test.step == step.key and (test.kind == "public") == public]
                if not step_tests:
                    continue
                if step.key in stopped:
                    message, limit = stopped[step.key]
                    for test in step_tests:
                        verdicts[test.name] = TestResult(test.name, step.key, 0.0, test.points, message,
                                                         test.visibility, {}, limit)
                    continue
                left = options.limits.submission_seconds - (time.monotonic() - started - credited)
                if left <= 0.5 and not sandbox.fatal:
                    sandbox.fatal, sandbox.fatal_limit = (
                        f"submission time limit: grading stopped after {options.limits.submission_seconds:g} s "
                        "(earlier steps were too slow)"), Limit.TIME
                budget = min(options.limits.step_seconds - spent.get(step.key, 0.0), left)
                began, waited = time.monotonic(), sum(sandbox.setup_seconds)
                step_results = (grade_step(sandbox, step.key, step_tests, budget, public_shift=shift if public else 0)
                                if budget > 0 or sandbox.fatal
                                else out_of_step_time(step.key, step_tests, options.limits.step_seconds))
                # Waiting for a sealed worker (the fork server's start, for a judge's first) is not the step's time.
                setup = sum(sandbox.setup_seconds) - waited
                # Nor the time its worker (or this judge) waited for a CPU others held (MAX_CPU_WAIT_CREDIT).
                busy = sandbox.worker.cpu_wait_credited if sandbox.worker is not None else 0.0
                credited += busy
                spent[step.key] = spent.get(step.key, 0.0) + time.monotonic() - began - setup - busy
                verdicts.update((verdict.name, verdict) for verdict in step_results)
                worker = sandbox.worker
                if public and worker is not None and worker.dead:
                    stopped[step.key] = (worker.dead, worker.limit)
    finally:
        sandbox.close()  # the student's whole process tree is gone before the verdict is written
    result.tests = [verdicts[test.name] for test in tests if test.name in verdicts]
    result.problems = sandbox.problems
    result.seconds = time.monotonic() - started
    result.cpu = {"judge": time.thread_time() - judge_cpu, "worker": sandbox.cpu_seconds}
    if sandbox.protections:
        result.sandbox = {**sandbox.protections, "setup_ms": round(1000 * sandbox.setup_seconds[0], 1)}
    return result


def out_of_step_time(step_key, tests, seconds):
    """The verdicts of a step part left no time by the step's other part."""
    message = f"time limit: this step ran past its {seconds:g} s budget"
    return [TestResult(test.name, step_key, 0.0, test.points, message, test.visibility, {}, Limit.TIME)
            for test in tests]
