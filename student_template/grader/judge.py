"""Grade one submission: a sandboxed worker runs the student's code, step after step.

The judge (this process) holds the tests, the references and the verdicts;
the worker only runs student code and returns plain data. Each step has its
own time budget; a step whose worker hangs, crashes, exits or runs out of
memory fails on its own, and the next step gets a fresh worker.
"""

import time
import traceback
from dataclasses import dataclass, field

import torch

from .loader import SubmissionError, read_chunks
from .steps import STEPS
from .student import Student, StudentError, StudentUnavailable
from .testing import details_of
from .worker import WorkerTransport

# The judge's tensors are tiny and it grades several submissions in threads while
# workers run beside it: torch's intra-op thread pool only adds contention (measured:
# softmax of a 6x6 took 4 ms with the default pool, microseconds with one thread).
torch.set_num_threads(1)


@dataclass
class Options:
    device: str = "cpu"
    time_limit: float = 10.0  # seconds per step, loading included
    memory_limit: int = 2 << 30  # bytes a step may add on top of the warm worker
    submission_time_limit: float = 120.0  # seconds for all steps of one submission
    isolate_user: bool = None  # run student code under its own uid (default: when running as root)


@dataclass
class TestResult:
    name: str
    step: str
    score: float
    max_score: float
    output: str
    visibility: str
    details: dict = field(default_factory=dict)  # plain data: likely cause, picture, the student's error


@dataclass
class SubmissionResult:
    name: str
    path: str
    tests: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    seconds: float = 0.0
    fingerprint: str = ""  # what was graded, with what (see bulk.fingerprint): unchanged means no regrade
    text: str = ""  # its results.json as written or read by a class run

    @property
    def score(self):
        return sum(test.score for test in self.tests)

    def step_scores(self):
        scores = {step.key: 0.0 for step in STEPS}
        for test in self.tests:
            scores[test.step] += test.score
        return scores


def run_test(test, student, details=None):
    """Run one graded test; return (passed, message). A failure's plain-data details (see
    testing.details_of) go into `details` when given."""
    try:
        test.function(student)
        return True, ""
    except (StudentError, StudentUnavailable) as error:
        if details is not None:
            details.update(details_of(error))
        return False, str(error)
    except AssertionError as error:
        if details is not None:
            details.update(details_of(error))
        return False, str(error) or "assertion failed"
    except Exception as error:  # noqa: BLE001 - an odd student output tripped the check itself
        where = traceback.extract_tb(error.__traceback__)[-1]
        return False, (f"the check could not run on your output ({type(error).__name__}: {error}); "
                       f"check the shapes and types your code returns [at {where.name}]")


class Sandbox:
    """The worker of one submission: started on first use, replaced after a step kills it.

    A file whose loading itself hangs or crashes fails every step at once:
    loading is the same for every step, so retrying would only waste time."""

    def __init__(self, path, options):
        self.path = path
        self.options = options
        self.worker = None
        self.fatal = None
        self.problems = []

    def student_for(self, seconds):
        """A Student for the next step with `seconds` to spend, or None (then `fatal` says why)."""
        if self.fatal:
            return None
        if self.worker is not None and not self.worker.dead:
            self.worker.begin_step(seconds)
        else:
            self.close()
            try:
                self.worker = WorkerTransport(
                    self.path, self.options.device, seconds, self.options.memory_limit,
                    cpu_seconds=int(self.options.submission_time_limit) + 2, isolate_user=self.options.isolate_user)
            except StudentUnavailable as error:
                self.worker, self.fatal = None, str(error)
                return None
            self.problems.extend(p for p in self.worker.problems if p not in self.problems)
            self.fatal = self.worker.fatal
            if self.fatal:
                return None
        return Student(self.worker, self.options.device)

    def close(self):
        if self.worker is not None:
            self.worker.close()
            self.worker = None


def grade_step(sandbox, step_key, tests, seconds):
    """Run the tests of one step against the submission's worker."""
    student = sandbox.student_for(seconds)
    results = []
    for test in tests:
        details = {}
        if student is None:
            passed, message = False, sandbox.fatal
        else:
            passed, message = run_test(test, student, details)
        results.append(TestResult(test.name, step_key, test.points if passed else 0.0, test.points,
                                  message, test.visibility, details))
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


def zero_result(name, path, tests, why):
    """Zero on every test, with `why` as the message: for a file that cannot be graded at all."""
    result = SubmissionResult(name, str(path or ""), problems=[why])
    result.tests = [TestResult(t.name, t.step, 0.0, t.points, why, t.visibility) for t in tests]
    return result


def grade_submission(path, name, tests, options):
    """Grade one file against all steps, within the per-step and per-submission time limits."""
    started = time.monotonic()
    result = SubmissionResult(name, str(path))
    unreadable = check_readable(path)
    if unreadable:
        return zero_result(name, path, tests, unreadable)
    sandbox = Sandbox(path, options)
    try:
        for step in STEPS:
            step_tests = [test for test in tests if test.step == step.key]
            if not step_tests:
                continue
            left = options.submission_time_limit - (time.monotonic() - started)
            if left <= 0.5:
                sandbox.fatal = sandbox.fatal or (
                    f"submission time limit: grading stopped after {options.submission_time_limit:g} s "
                    "(earlier steps were too slow)")
            result.tests.extend(grade_step(sandbox, step.key, step_tests, min(options.time_limit, left)))
    finally:
        sandbox.close()  # the student's whole process tree is gone before the verdict is written
    result.problems = sandbox.problems
    result.seconds = time.monotonic() - started
    return result
