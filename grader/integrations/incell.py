"""Run one of the kit's graded tests on a notebook's own definitions: Otter's and nbgrader's cells.

Both tools run the student's code and the checks in one kernel; each generated
check is one line that runs a kit test through the same Student interface the
sandboxed grader uses, in-process over the notebook's globals (`run_in_cell`,
the one path, seeded the same way for both). A failure raises `CheckFailed`,
whose traceback is its teaching message only: no frame of the (possibly hidden)
test module is ever shown.

nbgrader grades a test cell by its output: an error or anything on stderr is
zero, anything else full points. Its cells call `kit.check("<test name>")`
(`NotebookChecks`). Otter's test files (exception format) call
`check(env, KIT, "<test name>")`, where `env` is the notebook's or script's
globals and KIT the folder holding the kit's `grader/` package and `tests/`:
the working folder when Otter grades (its zip ships `tests/public/` and
`tests/hidden/` inside Otter's own tests folder, which Otter replaces wholesale
on every run). Otter seeds numpy and `random` at most, never torch.

For nbgrader, public tests are found in `tests/public/` next to the notebook (they ship with
the assignment). Hidden tests (`kit.check(name, hidden=True)`) are not in the
release: nbgrader runs them from `kit_hidden_tests/hidden/` in the course
directory, found by walking up from the folder above the notebook's (the
notebook's own folder holds what the student submitted), or from
`$KIT_HIDDEN_TESTS` (the folder holding `hidden/`).
"""

import contextlib
import io
import os
import warnings
from pathlib import Path

from grader.check.session import Session
from grader.check.student import InProcessTransport, Student
from grader.check.testing import seeded
from grader.check.notebook import NamespaceModule
from grader.check.runner import run_test
from grader.check.suite import discover

HIDDEN_FOLDER = "kit_hidden_tests"


class CheckFailed(AssertionError):
    """A failed check; IPython shows `_render_traceback_` instead of a traceback."""

    def _render_traceback_(self):
        return [f"CheckFailed: {self}"]


def hidden_tests_root(notebook_folder=None):
    """The folder holding `hidden/`, or None where the hidden tests are not installed."""
    if os.environ.get("KIT_HIDDEN_TESTS"):
        return Path(os.environ["KIT_HIDDEN_TESTS"])
    # Not the notebook's own folder: a student could submit a `kit_hidden_tests/` of their own.
    for folder in Path(notebook_folder or Path.cwd()).resolve().parents:
        if (folder / HIDDEN_FOLDER / "hidden").is_dir():
            return folder / HIDDEN_FOLDER
    return None


class NotebookChecks:
    def __init__(self, namespace, folder=None, device="cpu"):
        self.namespace = namespace
        self.folder = Path(folder or Path.cwd())
        self.device = device
        self._tests = {}

    def _find(self, name, kind):
        if kind not in self._tests:
            root = self.folder / "tests" if kind == "public" else hidden_tests_root(self.folder)
            if root is None:
                raise CheckFailed(f"{name}: this is a hidden test; it only runs when the course grades your notebook")
            self._tests[kind] = {t.name: t for t in discover(root, kinds=(kind,))}
        if name not in self._tests[kind]:
            raise CheckFailed(f"{name}: no such {kind} test in this course's kit")
        return self._tests[kind][name]

    def check(self, name, hidden=False):
        """Run the kit test `name` on the notebook's definitions; raise CheckFailed if it fails."""
        test = self._find(name, "hidden" if hidden else "public")
        run_in_cell(test, self.namespace, self.device)
        print(f"passed: {name} ({test.points:g} point{'' if test.points == 1 else 's'})")


def run_in_cell(test, namespace, device="cpu"):
    """Run the kit test `test` on the globals `namespace`; raise CheckFailed if it fails."""
    student = Student(InProcessTransport(Session(NamespaceModule(namespace), device)), device)
    # Anything the student's code prints (warnings included) would reach stderr and zero the
    # cell in nbgrader, even when the answer is right: keep it out of the cell's output.
    # The tests seed what they draw; seeding the rest makes it repeatable too.
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()), seeded(0):
        warnings.simplefilter("ignore")
        passed, message = run_test(test, student)
    if not passed:
        raise CheckFailed(f"{test.name}\n{message}")


# -- Otter ------------------------------------------------------------------------------------------------
_TESTS = {}  # kit folder -> {name: GradedTest}: the kit's tests are discovered once per kernel


def kit_tests(kit):
    """{name: GradedTest} of KIT/tests/public and, where it exists, KIT/tests/hidden."""
    if kit not in _TESTS:
        _TESTS[kit] = {test.name: test for test in discover(Path(kit) / "tests", kinds=("public", "hidden"))}
    return _TESTS[kit]


def check(env, kit, name, device="cpu"):
    """Otter's case: run the kit test `name` on the globals `env`; raise CheckFailed if it fails."""
    test = kit_tests(kit).get(name)
    if test is None:
        raise CheckFailed(f"{name}: no such test in this kit (is tests/ from the same release?)")
    run_in_cell(test, env, device)
