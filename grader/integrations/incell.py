"""Run one of the kit's graded tests on a submission's definitions: Otter's and nbgrader's cells.

Both tools run the student's code and the checks in one kernel; each generated
check is one line that runs a kit test through the same Student interface the
sandboxed grader uses, in-process (`run_in_cell`, the one path, seeded the same
way for both). A failure raises `CheckFailed`, whose traceback is its teaching
message only: no frame of the (possibly hidden) test module is ever shown.

When a tool grades (`otter run`, nbgrader's autograde and validate), the checks grade
the submitted file as `make grade` does (`Grading`), not the kernel's globals:

* its definitions are loaded by the kit's loader (grader.check.loader), so a syntax
  error costs the block it is in, not the whole cell or script (Otter runs a .py as one
  cell), and demo code is left out;
* each step has the judge's time budget (`step_seconds`, the CLI's and the Makefile's 10 s
  unless KIT_STEP_SECONDS says otherwise) for all of its checks, public then hidden: a
  check still running when it is spent is stopped (SIGALRM, repeated until the check
  returns), and it and the step's later checks fail with the judge's message; the next
  step gets its definitions loaded afresh, as the judge's next step gets a fresh worker.

Where no graded file is found (a student running the checks in their own kernel), the
kernel's globals are checked, each check with a step's budget of its own.

nbgrader grades a test cell by its output: an error or anything on stderr is
zero, anything else full points. Its cells call `kit.check("<test name>")`
(`NotebookChecks`). Otter's test files (exception format) call
`check(env, KIT, "<test name>", STEP_SECONDS)`, where `env` is the notebook's or script's
globals and KIT the folder holding the kit's `grader/` package and `tests/`:
the working folder when Otter grades (its zip ships `tests/public/` and
`tests/hidden/` inside Otter's own tests folder, which Otter replaces wholesale
on every run), which also holds the submission. Otter seeds numpy and `random` at most, never torch.

For nbgrader, public tests are found in `tests/public/` next to the notebook (they ship with
the assignment). Hidden tests (`kit.check(name, hidden=True)`) are not in the
release: nbgrader runs them from `kit_hidden_tests/hidden/` in the course
directory, found by walking up from the folder above the notebook's (the
notebook's own folder holds what the student submitted), or from
`$KIT_HIDDEN_TESTS` (the folder holding `hidden/`).
"""

import contextlib
import ctypes
import hashlib
import io
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from grader.check.loader import Loaded, SubmissionError, left_out_note, load_definitions
from grader.check.session import Session
from grader.check.student import InProcessTransport, Student
from grader.check.testing import seeded
from grader.check.notebook import NamespaceModule
from grader.check.runner import run_test
from grader.check import public_inputs
from grader.check.suite import GradedTest, discover, hidden_secret
from grader.sandbox.limits import MAX_CPU_WAIT_CREDIT, wait_credit

HIDDEN_FOLDER = "kit_hidden_tests"
STEP_SECONDS = 10.0  # the judge's default per step (grader.sandbox.limits); the generated cells pass theirs
REPEAT_SECONDS = 0.05  # a stopped check is stopped again this often until it returns (code that caught it once)
GRADING_ENV = "NBGRADER_EXECUTION"  # set by nbgrader's autograde ("autograde") and validate ("validate")


class CheckFailed(AssertionError):
    """A failed check; IPython shows `_render_traceback_` instead of a traceback."""

    def _render_traceback_(self):
        return [f"CheckFailed: {self}"]


class StepTimeout(KeyboardInterrupt):
    """Raised in the checked code when its step's budget is spent. A KeyboardInterrupt, as the judge's
    worker treats one: the kit's session and loader let it through, and `except Exception` does not catch it."""


def step_seconds(default: float = STEP_SECONDS) -> float:
    """The per-step budget: $KIT_STEP_SECONDS (`make grade ENGINE=otter TIME_LIMIT=...` sets it) or `default`."""
    try:
        value = float(os.environ.get("KIT_STEP_SECONDS") or default)
    except ValueError:
        value = float(default)
    return value if value > 0 else float(default)


def hidden_tests_root(notebook_folder: str | Path | None = None) -> Path | None:
    """The folder holding `hidden/`, or None where the hidden tests are not installed."""
    if os.environ.get("KIT_HIDDEN_TESTS"):
        return Path(os.environ["KIT_HIDDEN_TESTS"])
    # Not the notebook's own folder: a student could submit a `kit_hidden_tests/` of their own.
    for folder in Path(notebook_folder or Path.cwd()).resolve().parents:
        if (folder / HIDDEN_FOLDER / "hidden").is_dir():
            return folder / HIDDEN_FOLDER
    return None


# -- time limits ---------------------------------------------------------------------------------------------
def call_with_time_limit(seconds: float, function: Callable[[], Any],
                         place_of: Callable[[FrameType | None], str] | None = None) -> tuple[Any, str | None]:
    """(function's value, None), or (None, where) when `seconds` ran out first: `where` is "" or, via
    `place_of(frame)`, where in the student's code it was stopped."""
    if seconds <= 0:
        return None, ""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        return _with_alarm(seconds, function, place_of)
    return _with_watchdog(seconds, function)


def _cpu_wait():
    """This thread's wait for a CPU others held, in seconds (0 where the kernel does not count it)."""
    from grader.sandbox.processes import own_cpu_wait_seconds  # stdlib only: ships with the autograders

    return own_cpu_wait_seconds()


def _with_alarm(seconds, function, place_of):
    # The deadline moves by the time the check waited for a CPU others held, as the judge's does (limits.py).
    state: dict[str, Any] = {"armed": True, "where": None, "waited": _cpu_wait(), "credited": 0.0}

    def on_alarm(signum, frame):
        if state["armed"]:
            credit = wait_credit(_cpu_wait() - state["waited"], state["credited"], seconds)
            if credit and state["where"] is None:
                state["credited"] += credit
                signal.setitimer(signal.ITIMER_REAL, credit, REPEAT_SECONDS)
                return
            if state["where"] is None:
                state["where"] = (place_of(frame) if place_of else "") or ""
            raise StepTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds, REPEAT_SECONDS)
        try:
            value = function()
        finally:
            state["armed"] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    except StepTimeout:
        value = None
    finally:
        state["armed"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)  # None: not set from Python
    # A stop that the student's code swallowed (a bare `except:`) is still a stop.
    return (None, state["where"]) if state["where"] is not None else (value, None)


def _with_watchdog(seconds, function):
    """Outside the main thread (no signals there): raise StepTimeout in this thread from a watchdog thread.
    A blocking call (time.sleep) is only stopped when it returns."""
    target, done, fired = threading.get_ident(), threading.Event(), []

    def watch():
        if done.wait(seconds):
            return
        while not done.is_set():
            fired.append(True)
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(StepTimeout))
            done.wait(REPEAT_SECONDS)

    watchdog = threading.Thread(target=watch, daemon=True)
    value = None
    try:
        watchdog.start()
        try:
            value = function()
        finally:
            done.set()
    except StepTimeout:
        pass
    while watchdog.is_alive():  # an exception it set after `done` arrives here, at the latest
        try:
            watchdog.join()
        except StepTimeout:
            pass
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), None)
    return (None, "") if fired else (value, None)


def time_limit_message(seconds: float, where: str = "") -> str:
    """The judge's words for a step that ran past its budget (grader.sandbox.transport)."""
    return (f"time limit: this step ran past its {seconds:g} s budget{' in ' + where if where else ''} "
            "(an infinite loop, or work that grows too fast?)")


# -- one submission graded as the judge grades it ----------------------------------------------------------------
class Grading:
    """A submitted file graded in this kernel as `make grade` grades it: its definitions loaded by the kit's
    loader, each step with its own time budget for all of its checks; a step whose budget ran out fails its
    later checks, and the next step gets the definitions loaded afresh (the judge's fresh worker)."""

    def __init__(self, path, seconds):
        self.path, self.seconds = Path(path), seconds
        # the judge's moved public inputs (check.public_inputs), where the hidden tests are installed
        hidden = hidden_tests_root(self.path.parent)
        secret = hidden_secret(discover(hidden, kinds=("hidden",))) if hidden is not None else b""
        self.public_shift = public_inputs.shift_for(self.path.read_bytes(), secret)
        self.loaded: Loaded | None = None
        self.fatal: str | None = None
        self.spent, self.stopped = {}, {}  # step key -> seconds used / the message that stopped it

    def _place(self, frame):
        """`causal_mask, line 12 of attention.py` (of its cell, in a notebook: cells get renumbered): the
        innermost frame of the submission's code where it was stopped, or ""."""
        name = self.path.name
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename == name or filename.startswith(name + ", cell "):
                qualified = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
                return f"{qualified}, line {frame.f_lineno} of {'its cell' if ', cell ' in filename else filename}"
            frame = frame.f_back
        return ""

    @staticmethod
    def _clock():
        return time.monotonic(), _cpu_wait()

    @staticmethod
    def _since(began, budget):
        """Seconds of the step's budget used since `began` (a _clock()): the wait for a CPU others held, as
        far as call_with_time_limit credited it, does not count."""
        elapsed, waited = time.monotonic() - began[0], _cpu_wait() - began[1]
        return max(0.0, elapsed - min(waited, MAX_CPU_WAIT_CREDIT * budget))

    def _load(self, step):
        """Load the file's definitions within what is left of `step`'s budget (loading is a step's time,
        as in the judge's worker); a file whose loading fails or hangs fails every check."""
        began = self._clock()
        left = self.seconds - self.spent.get(step, 0.0)
        try:
            loaded, where = call_with_time_limit(left, lambda: _load_as_a_worker(self.path), self._place)
        except SubmissionError as error:
            loaded, where, self.fatal = None, None, str(error)
        self.spent[step] = self.spent.get(step, 0.0) + self._since(began, left)
        if where is not None:
            self.fatal = time_limit_message(self.seconds, where or "loading your file")
        self.loaded = loaded

    def run(self, test: GradedTest, device: str = "cpu") -> tuple[bool, str]:
        """(passed, message) of one kit test, as the judge would give it."""
        step = test.step
        if step in self.stopped:
            return False, self.stopped[step]
        if self.loaded is None and self.fatal is None:
            self._load(step)
        if self.fatal:
            return False, self.fatal
        left = self.seconds - self.spent.get(step, 0.0)
        if left <= 0:
            self.stopped[step] = time_limit_message(self.seconds)
            return False, self.stopped[step]
        loaded = self.loaded
        assert loaded is not None  # _load loaded the file, or said why not in `fatal`
        began = self._clock()
        outcome, where = call_with_time_limit(left, lambda: _run(test, loaded.module, device, self.public_shift),
                                              self._place)
        self.spent[step] = self.spent.get(step, 0.0) + self._since(began, left)
        if where is not None:
            self.stopped[step] = time_limit_message(self.seconds, where)
            self.loaded = None  # the next step loads the definitions again, as a fresh worker would
            return False, self.stopped[step]
        passed, message = outcome
        errors = [problem for problem in loaded.problems if not left_out_note(problem)]
        if not passed and errors:
            message += "\n(loading your file: " + "; ".join(errors[:3]) + ")"
        return passed, message


# (file, its digest, step budget) -> Grading: one per submission per kernel
_GRADINGS: dict[tuple[str, str, float], Grading] = {}


def grading_of(path: str | Path, seconds: float) -> Grading:
    """The Grading of the file at `path` (created on first use, kept for the kernel's life)."""
    path = Path(path).resolve()
    key = (str(path), hashlib.sha256(path.read_bytes()).hexdigest(), seconds)
    if key not in _GRADINGS:
        _GRADINGS[key] = Grading(path, seconds)
    return _GRADINGS[key]


def _run(test, module, device, public_shift=0):
    """(passed, message) of `test` on `module` (the loaded file, or a kernel's globals), output captured."""
    student = Student(InProcessTransport(Session(module, device)), device, public_shift=public_shift)
    # Anything the student's code prints (warnings included) would reach stderr and zero the
    # cell in nbgrader, even when the answer is right: keep it out of the cell's output.
    # The tests seed what they draw; seeding the rest makes it repeatable too.
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()), seeded(0), torch_defaults_of_a_fresh_worker():
        warnings.simplefilter("ignore")
        return run_test(test, student)


def _load_as_a_worker(path):
    with torch_defaults_of_a_fresh_worker():  # what the file builds at its top level, built as the worker builds it
        return load_definitions(path)


@contextlib.contextmanager
def torch_defaults_of_a_fresh_worker():
    """torch's process-wide defaults (dtype, device) as the judge's fresh worker has them, for one check, then
    as they were. Otter and nbgrader run the whole file in the checks' kernel first, so a top-level
    `torch.set_default_dtype(torch.float64)`, which the judge's loader leaves out as demo code, changed the
    checks' own tensors there: "Float did not match Double", 93 points instead of 100 (float16: 42.75)."""
    import torch

    dtype = torch.get_default_dtype()
    get_device = getattr(torch, "get_default_device", None)  # PyTorch 2.3+; before, no default device to read
    device = get_device() if get_device is not None else None
    torch.set_default_dtype(torch.float32)
    if device is not None and device.type != "cpu":
        torch.set_default_device("cpu")
    try:
        yield
    finally:
        torch.set_default_dtype(dtype)
        if device is not None and device.type != "cpu":
            torch.set_default_device(device)


def run_in_cell(test: GradedTest, namespace: dict[str, Any], device: str = "cpu",
                seconds: float = STEP_SECONDS) -> None:
    """Run the kit test `test` on the globals `namespace` within `seconds`; raise CheckFailed if it fails."""
    outcome, where = call_with_time_limit(seconds, lambda: _run(test, NamespaceModule(namespace), device))
    passed, message = (False, time_limit_message(seconds, where)) if where is not None else outcome
    if not passed:
        raise CheckFailed(f"{test.name}\n{message}")


def run_graded(test: GradedTest, path: str | Path, device: str = "cpu", seconds: float = STEP_SECONDS) -> None:
    """Run the kit test `test` on the submitted file at `path`, as the judge would; raise CheckFailed if it fails."""
    passed, message = grading_of(path, seconds).run(test, device)
    if not passed:
        raise CheckFailed(f"{test.name}\n{message}")


# -- nbgrader ----------------------------------------------------------------------------------------------------
class NotebookChecks:
    def __init__(self, namespace, notebook=None, folder=None, device="cpu", step_seconds=STEP_SECONDS):
        self.namespace = namespace
        self.notebook = notebook  # the assignment's notebook file name, graded as a file when nbgrader grades
        self.folder = Path(folder or Path.cwd())
        self.device = device
        self.seconds = step_seconds
        self._tests = {}

    def _find(self, name, kind):
        if kind not in self._tests:
            root = self.folder / "tests" if kind == "public" else hidden_tests_root(self.folder)
            if root is None:
                raise CheckFailed(f"{name}: this is a hidden test; it only runs when the course grades your notebook")
            with torch_defaults_of_a_fresh_worker():  # the tests' own module-level tensors too
                self._tests[kind] = {t.name: t for t in discover(root, kinds=(kind,))}
        if name not in self._tests[kind]:
            raise CheckFailed(f"{name}: no such {kind} test in this course's kit")
        return self._tests[kind][name]

    def graded_file(self) -> Path | None:
        """The notebook nbgrader is grading (autograde and validate run it from its own folder), or None."""
        if not (self.notebook and os.environ.get(GRADING_ENV)):
            return None
        path = self.folder / self.notebook
        return path if path.is_file() else None

    def check(self, name: str, hidden: bool = False) -> None:
        """Run the kit test `name` on the notebook's definitions; raise CheckFailed if it fails."""
        test = self._find(name, "hidden" if hidden else "public")
        path, seconds = self.graded_file(), step_seconds(self.seconds)
        if path is not None:
            run_graded(test, path, self.device, seconds)
        else:
            run_in_cell(test, self.namespace, self.device, seconds)
        print(f"passed: {name} ({test.points:g} point{'' if test.points == 1 else 's'})")


# -- Otter ------------------------------------------------------------------------------------------------
# kit folder -> {name: GradedTest}: the kit's tests are discovered once per kernel
_TESTS: dict[str | Path, dict[str, GradedTest]] = {}


def kit_tests(kit: str | Path) -> dict[str, GradedTest]:
    """{name: GradedTest} of KIT/tests/public and, where it exists, KIT/tests/hidden."""
    if kit not in _TESTS:
        with torch_defaults_of_a_fresh_worker():  # the tests' own module-level tensors too
            _TESTS[kit] = {test.name: test for test in discover(Path(kit) / "tests", kinds=("public", "hidden"))}
    return _TESTS[kit]


def otter_submission(folder: str | Path) -> Path | None:
    """The file `otter run` grades in `folder`, found as Otter finds it (its PythonRunner): the one
    notebook, else the one .py other than `__init__.py`; None when there is no single one."""
    notebooks = sorted(Path(folder).glob("*.ipynb"))
    if notebooks:
        return notebooks[0] if len(notebooks) == 1 else None
    scripts = [path for path in sorted(Path(folder).glob("*.py")) if path.name != "__init__.py"]
    return scripts[0] if len(scripts) == 1 else None


def check(env: dict[str, Any], kit: str | Path, name: str, seconds: float = STEP_SECONDS,
          device: str = "cpu") -> None:
    """Otter's case: run the kit test `name` on the submission in the working folder (where Otter grades
    it), or on the globals `env` where there is none; raise CheckFailed if it fails."""
    test = kit_tests(kit).get(name)
    if test is None:
        raise CheckFailed(f"{name}: no such test in this kit (is tests/ from the same release?)")
    path, seconds = otter_submission(Path.cwd()), step_seconds(seconds)
    if path is not None:
        run_graded(test, path, device, seconds)
    else:
        run_in_cell(test, env, device, seconds)
