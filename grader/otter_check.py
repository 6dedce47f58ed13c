"""The kit's tests as Otter test cases: what the generated Otter test files call.

`make publish` writes one Otter test file per step (exception format): each
case is one line, `check(env, KIT, "<kit test name>")`, where `env` is the
notebook's or script's globals (Otter passes them to a parameter named `env`)
and KIT the folder holding the kit's `grader/` package and `tests/`: the
working folder when Otter grades (its zip ships `tests/public/` and
`tests/hidden/` inside Otter's own tests folder, which Otter replaces wholesale
on every run), the folder above the notebook in the student release (public
tests only). The kit test runs through the same Student interface as the
sandboxed grader, over those globals in Otter's kernel; a failure raises with
the test's teaching message.

Otter seeds numpy and `random` at most, never torch: each case runs seeded.
"""

import contextlib
import io
import warnings
from pathlib import Path

from .judge import run_test
from .notebook_checks import CheckFailed, NotebookModule
from .session import Session
from .student import InProcessTransport, Student
from .suite import discover
from .testing import seeded

_TESTS = {}  # kit folder -> {name: GradedTest}: the kit's tests are discovered once per kernel


def kit_tests(kit):
    """{name: GradedTest} of KIT/tests/public and, where it exists, KIT/tests/hidden."""
    if kit not in _TESTS:
        _TESTS[kit] = {test.name: test for test in discover(Path(kit) / "tests", kinds=("public", "hidden"))}
    return _TESTS[kit]


def check(env, kit, name, device="cpu"):
    """Run the kit test `name` on the globals `env`; raise CheckFailed (an AssertionError) if it fails."""
    test = kit_tests(kit).get(name)
    if test is None:
        raise CheckFailed(f"{name}: no such test in this kit (is tests/ from the same release?)")
    student = Student(InProcessTransport(Session(NotebookModule(env), device)), device)
    # The student's prints and warnings stay out of the check's report.
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()), seeded(0):
        warnings.simplefilter("ignore")
        passed, message = run_test(test, student)
    if not passed:
        raise CheckFailed(f"{name}\n{message}")
