"""A run stopped by a signal (Ctrl-C, SIGTERM, SIGHUP) ends cleanly and records nothing it is not sure of.

The command line installs `install()` before it grades. The first signal sets one flag for the whole
process and raises `Stopped` in the main thread; grading threads see the flag at their next wait
(`check`), a worker that died at the same moment is never turned into a verdict (`after_death`), and no
result is written once the flag is set. A second signal ends the process at once (every result already
written was written atomically, so nothing half-written is left), unless it is an echo of the first
(`ECHO_SECONDS`: make forwards SIGTERM to its child, which the process group got already).

The flag is process-wide by nature (a signal is delivered to a process, not to an object); a forked judge
inherits the handlers and keeps a flag of its own.
"""

import contextlib
import os
import signal
import sys
import threading
import time

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
# A worker's death by one of these is the run being stopped (the scheduler or the terminal signalling every
# process of the job) far more often than the student's own code: wait this long for our own signal to arrive
# before calling it the student's crash.
DEATH_GRACE_SECONDS = 1.0
DEATH_SIGNALS = frozenset(int(number) for number in (*SIGNALS, signal.SIGKILL))
# The same stop often arrives twice at once: the terminal signals the process group, and make forwards its own
# SIGTERM to its child. A repeat within this window is that echo; a later one is the user insisting.
ECHO_SECONDS = 1.0

_requested = threading.Event()


class _Received:
    number: int | None = None  # the first stopping signal's number
    at: float = 0.0  # when it came (time.monotonic)
    holding: bool = False  # the command has returned: a stop is kept, never raised (`hold`)


class Stopped(BaseException):
    """Grading was stopped by a signal: nothing under way is recorded. A BaseException, like
    KeyboardInterrupt, so that no check's `except Exception` can turn it into a test failure."""

    def __init__(self, number: int | None = None) -> None:
        number = number if number is not None else _Received.number
        self.number = number
        self.graded, self.total = None, None  # set by whoever knows (cohort.bulk.grade_class)
        super().__init__(name_of(number))

    @property
    def exit_code(self):
        return 128 + self.number if self.number else 130


def name_of(number):
    try:
        return signal.Signals(number).name
    except (ValueError, TypeError):
        return "a signal"


def requested():
    return _requested.is_set()


def check():
    """Raise Stopped when the run is being stopped (call before recording anything)."""
    if _requested.is_set():
        raise Stopped()


def after_death(signal_number):
    """Called when a worker died of `signal_number` (None for an exit): Stopped when the run is being stopped,
    so the death is not recorded as the student's. A death by a signal that stops runs waits a moment for
    this process's own copy of it, which the kernel may deliver a little later."""
    if signal_number in DEATH_SIGNALS:
        _requested.wait(DEATH_GRACE_SECONDS)
    check()


def _importing(frame):
    """Whether the main thread is inside an import. An exception raised there can leave an extension module
    half-initialised, and importing it again then fails with an error of its own that hides the stop (numpy:
    "CPU dispatcher tracer already initialized", seen when SIGTERM came while the grader imported torch)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _on_signal(number, frame):
    if _requested.is_set():
        if time.monotonic() - _Received.at < ECHO_SECONDS:
            return  # the same stop, delivered twice: the clean stop under way goes on
        os._exit(128 + number)  # a second signal: the user insists
    _Received.number, _Received.at = number, time.monotonic()
    _requested.set()
    if _Received.holding or _importing(frame):
        return  # the stop is kept; the command's next `check()` (after its imports) raises it, or `late_exit`
    raise Stopped(number)


def hold():
    """The command has returned, every record it writes written: from here on (the exit handlers closing
    workers and fork servers) a stop is kept, never raised. Raised inside an exit handler it was a traceback
    Python ignores, and the run exited 0 as if nothing had come."""
    _Received.holding = True


@contextlib.contextmanager
def signals_held():
    """The stop signals held (blocked) for a short stretch that must not be cut: a fork and the parent's note of
    its child. A stop raised inside os.fork's hooks (logging's _releaseLock runs there in the parent) printed a
    traceback Python ignores and could leave logging's lock taken; held, it arrives when the stretch ends, where
    the command's code meets it. In a forked child the mask is put back too, and nothing is pending there."""
    if not hasattr(signal, "pthread_sigmask"):  # (no such call off POSIX, where nothing forks either)
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def late_exit(code):
    """The exit code of a command that returned `code` and may have been stopped after (see `hold`): a stop
    that came is still the run's end by a signal (128 + its number), said in one line, nothing lost."""
    if not _requested.is_set() or code != 0:
        return code
    print(f"stopped by {name_of(_Received.number)} after every record of this run was written: nothing is lost",
          file=sys.stderr, flush=True)
    return Stopped().exit_code


def install():
    """Handle SIGINT, SIGTERM and SIGHUP as a clean stop (main thread only). A signal this process was started
    ignoring stays ignored: `nohup make grade` must survive the hang-up, and a job started in the background of
    a script ignores Ctrl-C."""
    _Received.holding = False
    for number in SIGNALS:
        if signal.getsignal(number) != signal.SIG_IGN:
            signal.signal(number, _on_signal)


def reset():
    """Forget a stop (tests that stop a run in-process, then grade again)."""
    _requested.clear()
    _Received.number, _Received.at, _Received.holding = None, 0.0, False
