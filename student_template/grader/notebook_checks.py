"""Run one of the kit's graded tests on a notebook's own definitions (nbgrader test cells).

nbgrader grades a test cell by its output: an error or anything on stderr is
zero, anything else full points. So each generated test cell is one line,
`kit.check("<test name>")`, and `check` runs that kit test through the same
Student interface the sandboxed grader uses, in-process over the notebook's
globals. A failure raises `CheckFailed`, whose traceback is its teaching
message only: no frame of the (possibly hidden) test module is ever shown.

Public tests are found in `tests/public/` next to the notebook (they ship with
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

import torch

from .judge import run_test
from .session import Session
from .student import InProcessTransport, Student
from .suite import discover

HIDDEN_FOLDER = "kit_hidden_tests"


class CheckFailed(AssertionError):
    """A failed check; IPython shows `_render_traceback_` instead of a traceback."""

    def _render_traceback_(self):
        return [f"CheckFailed: {self}"]


class NotebookModule:
    """The notebook's globals seen as a module (what `Session` expects).

    Attribute writes go to the globals themselves, so the stand-in heads of the
    wrapper test replace the notebook's own `CausalAttention` for that build.
    """

    def __init__(self, namespace):
        object.__setattr__(self, "_namespace", namespace)

    def __getattr__(self, name):
        try:
            return self._namespace[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self._namespace[name] = value


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
        student = Student(InProcessTransport(Session(NotebookModule(self.namespace), self.device)), self.device)
        # Anything the student's code prints (warnings included) would reach stderr and zero the
        # cell in nbgrader, even when the answer is right: keep it out of the cell's output.
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.manual_seed(0)  # the tests seed what they draw; this makes the rest repeatable too
            passed, message = run_test(test, student)
        if not passed:
            raise CheckFailed(f"{name}\n{message}")
        print(f"passed: {name} ({test.points:g} point{'' if test.points == 1 else 's'})")
