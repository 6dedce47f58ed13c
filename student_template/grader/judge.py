"""Grade one submission: for each step, a fresh sandboxed worker runs that step's tests.

The judge (this process) holds the tests, the references and the verdicts;
the worker only runs student code and returns plain data. A step whose worker
hangs, crashes or exits fails on its own; the other steps go on.
"""

import time
import traceback
from dataclasses import dataclass, field

from .loader import SubmissionError, read_chunks
from .steps import STEPS
from .student import Student, StudentError, StudentUnavailable
from .worker import WorkerTransport


@dataclass
class Options:
    device: str = "cpu"
    time_limit: float = 10.0  # seconds per step, loading included
    memory_limit: int = 2 << 30  # bytes a step may add on top of the warm worker


@dataclass
class TestResult:
    name: str
    step: str
    score: float
    max_score: float
    output: str
    visibility: str


@dataclass
class SubmissionResult:
    name: str
    path: str
    tests: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self):
        return sum(test.score for test in self.tests)

    def step_scores(self):
        scores = {step.key: 0.0 for step in STEPS}
        for test in self.tests:
            scores[test.step] += test.score
        return scores


def run_test(test, student):
    """Run one graded test; return (passed, message)."""
    try:
        test.function(student)
        return True, ""
    except (StudentError, StudentUnavailable) as error:
        return False, str(error)
    except AssertionError as error:
        return False, str(error) or "assertion failed"
    except Exception as error:  # noqa: BLE001 - an odd student output tripped the check itself
        where = traceback.extract_tb(error.__traceback__)[-1]
        return False, (f"the check could not run on your output ({type(error).__name__}: {error}); "
                       f"check the shapes and types your code returns [at {where.name}]")


def grade_step(path, step_key, tests, options):
    """Run the tests of one step in one fresh worker."""
    results = []
    worker = None
    try:
        worker = WorkerTransport(path, options.device, options.time_limit, options.memory_limit)
        problems = worker.problems
        fatal = worker.fatal
    except StudentUnavailable as error:
        problems, fatal = [], str(error)
    try:
        student = Student(worker, options.device) if worker and not fatal else None
        for test in tests:
            if student is None:
                passed, message = False, fatal
            else:
                passed, message = run_test(test, student)
            results.append(TestResult(test.name, step_key, test.points if passed else 0.0, test.points,
                                      message, test.visibility))
    finally:
        if worker is not None:
            worker.close()
    return results, problems


def check_readable(path):
    """Fail fast, once, on a file that cannot be graded at all (empty, binary, bad notebook...)."""
    try:
        read_chunks(path)
        return None
    except SubmissionError as error:
        return str(error)
    except OSError as error:
        return f"{path}: cannot be read ({error.strerror})"


def grade_submission(path, name, tests, options, run_step=grade_step):
    """Grade one file against all steps. `run_step` lets a pool run steps elsewhere."""
    started = time.monotonic()
    result = SubmissionResult(name, str(path))
    unreadable = check_readable(path)
    if unreadable:
        result.problems.append(unreadable)
        result.tests = [TestResult(t.name, t.step, 0.0, t.points, unreadable, t.visibility) for t in tests]
        return result
    problems = []
    for step in STEPS:
        step_tests = [test for test in tests if test.step == step.key]
        if not step_tests:
            continue
        step_results, step_problems = run_step(path, step.key, step_tests, options)
        result.tests.extend(step_results)
        problems.extend(p for p in step_problems if p not in problems)
    result.problems = problems
    result.seconds = time.monotonic() - started
    return result
