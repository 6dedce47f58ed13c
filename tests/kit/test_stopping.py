"""A class run stopped at any moment (Ctrl-C, SIGTERM, SIGHUP, kill -9) records no verdict it is not sure of.

Before: a Ctrl-C sent to the process group killed the workers with the judges, and the submissions under
way were saved as "your code's process exited (exit code 0) ... remove sys.exit", kept by the next run as
"already graded and unchanged". Now the workers are out of the terminal's group, a stopped run records
nothing under way, says in one line how far it got, and the same command resumes; the final grades.csv is
byte-identical to an uninterrupted run's, and every result saved in between is the uninterrupted verdict.
"""

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from grader import stopping
from grader.cohort import class_record
from grader.faults.samples import synthetic_class
from grader.judging import results_json as results_io
from grader.judging.judge import Options, grade_submission
from grader.paths import ROOT
from grader.sandbox import pool
from tests.kit.launch import launched

COUNT = 16  # two judge processes at --jobs 4: the forked judges are stopped too
SEED = 20261126
# A step that hangs (its time limit is where an interruption most often lands) and a genuine exit, whose
# verdict must survive every interruption unchanged.
HANG = "\n\ndef causal_mask(context_length):\n    while True:\n        pass\n"
EXIT = "\n\nimport os\n\ndef attention_scores(queries, keys):\n    os._exit(0)\n"
GRADE = ("grade", "--jobs", "4", "--time-limit", "2")
LATE = "after every record of this run was written"  # a stop that found the run's work all done


def run(classroom, out):
    return subprocess.run([sys.executable, "-m", "grader", *GRADE[:1], str(classroom), "--out", str(out),
                           *GRADE[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def classroom(tmp_path_factory, clean):
    folder = tmp_path_factory.mktemp("class")
    for name, text in synthetic_class(clean, COUNT - 2).items():
        (folder / name).write_text(text)
    (folder / "student_hangs.py").write_text(clean + HANG)
    (folder / "student_exits.py").write_text(clean + EXIT)
    return folder


@pytest.fixture(scope="module")
def uninterrupted(classroom, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    began = time.monotonic()
    done = run(classroom, out)
    assert done.returncode == 0, done.stderr
    return out, time.monotonic() - began


def verdicts(out):
    """name -> [(test, points, limit)] of every results file in OUT."""
    found = {}
    for path in sorted((out / "results").glob("*.json")):
        result = results_io.read_results_json(path)
        found[result.name] = [(test.name, test.score, test.limit) for test in result.tests]
    return found


# The signals as a terminal's fresh job has them (a CI runner may start the tests with SIGHUP or SIGINT ignored,
# which the grader rightly keeps ignoring): set to their default in the started command (tests.kit.launch).
AS_TYPED = stopping.SIGNALS


def stop_at(classroom, out, number, delay):
    """Start a class run in its own process group, signal the whole group after `delay` s (as a terminal's
    Ctrl-C does); the finished process."""
    process = subprocess.Popen(launched([sys.executable, "-m", "grader", *GRADE[:1], classroom, "--out", out,
                                         *GRADE[1:]], default_signals=AS_TYPED),
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        process.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, number)
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, stdout, stderr


def test_a_run_stopped_at_random_moments_resumes_to_the_uninterrupted_grades(classroom, uninterrupted, tmp_path,
                                                                            grader_cli):
    whole, seconds = uninterrupted
    expected = verdicts(whole)
    assert any(limit for tests in expected.values() for _, _, limit in tests), "the class has no hang or exit"
    moments = random.Random(SEED)
    out = tmp_path / "out"
    stops = refusals = 0
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL) * 2:
        # a moment within what is left to grade: each run resumes the last, and on a fast machine a moment of
        # the whole run's length came after the resumed run had finished (CI of a fast clone: 3 stops of 4)
        left = seconds * (COUNT - len(verdicts(out)) if out.exists() else COUNT) / COUNT
        delay = max(0.5, moments.uniform(0.2, 0.7) * left)
        code, _, stderr = stop_at(classroom, out, number, delay)
        if code == 0:  # it finished before the signal: grading is complete already
            break
        where = f"{signal.Signals(number).name} after {delay:.1f} s"
        if number != signal.SIGKILL:
            assert code == 128 + number, f"{where}: exit {code}\n{stderr}"
            assert "Traceback" not in stderr, f"{where}: a traceback\n{stderr}"
            if LATE in stderr:  # it came once the last record was written (CI, stop 37): grading is complete
                break
            assert "the same command grades the rest" in stderr, f"{where}: {stderr}"
        stops += 1
        if class_record.unfinished(out):  # OUT is part this run, part none: no report or regrade reads it as a class
            for command in (("report",), ("regrade", "student_000")):
                refused = grader_cli(*command, "--out", out)
                assert refused.returncode == 2 and "was stopped before it finished" in refused.stderr, refused.stderr
            refusals += 1
        saved = verdicts(out)
        for name, tests in saved.items():  # whatever was saved is the verdict an uninterrupted run gives
            assert tests == expected[name], f"{where}: {name} was saved with a verdict of the interruption"
    assert stops >= 4, "too few runs were stopped midway"
    assert refusals >= 1, "no stop left a grade unfinished"
    done = run(classroom, out)
    assert done.returncode == 0, done.stderr
    assert not class_record.unfinished(out)
    assert (out / "grades.csv").read_bytes() == (whole / "grades.csv").read_bytes()
    assert verdicts(out) == expected


@pytest.mark.parametrize("command", [("report",), ("regrade", "student_000")])
def test_a_grade_stopped_before_its_first_result_is_named_as_stopped(tmp_path, grader_cli, command):
    """A stop between the grade's mark and its first result (CI, stop 38: SIGKILL at 0.5 s) left OUT with the
    mark alone; the report said "grade a class into it first" rather than "run the same command again"."""
    class_record.mark_unfinished(tmp_path)
    refused = grader_cli(*command, "--out", tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "was stopped before it finished: it had recorded no result yet" in refused.stderr, refused.stderr
    assert "Run the same grade command again" in refused.stderr


def test_a_worker_lost_before_the_file_reached_it_is_no_verdict(tmp_path, suite, clean, monkeypatch):
    """Before: a worker that ended before receiving the file (the machine, another run) was recorded as
    'your code's process exited/crashed while receiving your file'. Now the file gets another worker."""
    acquire, lost = pool.WorkerPool.acquire, []

    def acquire_then_lose(self, config):
        sealed, waited = acquire(self, config)
        if len(lost) < 2:  # the first two workers end before the file reaches them
            sealed.wait_sealed()
            os.kill(sealed.process.pid, signal.SIGTERM)
            sealed.process.join(5)
            lost.append(sealed.process.pid)
        return sealed, waited

    monkeypatch.setattr(pool.WorkerPool, "acquire", acquire_then_lose)
    path = tmp_path / "correct.py"
    path.write_text(clean)
    result = grade_submission(path, "correct", suite, Options.of(step_seconds=10))
    assert len(lost) == 2
    assert all(test.score == test.max_score for test in result.tests), [
        (test.name, test.output) for test in result.tests if test.score < test.max_score]


ECHOED = """
import os, signal, sys
from grader import stopping
stopping.install()
try:
    os.kill(os.getpid(), signal.SIGTERM)
    signal.pause()
except stopping.Stopped as stop:
    os.kill(os.getpid(), signal.SIGTERM)  # make forwards its SIGTERM to its child: the same stop, at once
    print("stopped cleanly by", stop, "exit", stop.exit_code)
"""


def test_a_signal_delivered_twice_at_once_is_one_stop():
    """Before: `make grade` stopped by SIGTERM printed no resume line (make forwards SIGTERM to its child, which
    the process group had signalled already: the second copy ended the grader at once)."""
    done = subprocess.run(launched([sys.executable, "-c", ECHOED], default_signals=AS_TYPED), cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.strip() == "stopped cleanly by SIGTERM exit 143"


NOHUP = """
import os, signal, time
from grader import stopping
stopping.install()
os.kill(os.getpid(), signal.SIGHUP)
time.sleep(0.2)
print("still grading", stopping.requested())
"""


def test_a_hang_up_the_run_was_started_to_ignore_stays_ignored():
    """`nohup make grade` starts the grader with SIGHUP ignored: logging out must not stop the class run."""
    done = subprocess.run(launched([sys.executable, "-c", NOHUP], ignored_signals=[signal.SIGHUP]), cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.strip() == "still grading False"


IMPORTING = """
import os, signal, sys, tempfile
from pathlib import Path
from grader import stopping
stopping.install()
folder = tempfile.mkdtemp()
# a module whose import is under way when the signal comes (as torch's was, imported by `grade` after install)
Path(folder, "slow_module.py").write_text("import os, signal\\nos.kill(os.getpid(), signal.SIGTERM)\\nDONE = True\\n")
sys.path.insert(0, folder)
import slow_module
print("imported", slow_module.DONE, stopping.requested())
try:
    stopping.check()
except stopping.Stopped as stop:
    print("stopped after the import", stop.exit_code)
"""


def test_a_stop_during_an_import_waits_for_the_import_to_finish():
    """Before: SIGTERM while `grade` imported torch raised inside numpy's extension module, whose second
    import then failed with "CPU dispatcher tracer already initlized": a traceback and exit 1 instead of a
    clean stop (seen once in CI). Now the stop is kept and raised by the command's next check."""
    done = subprocess.run(launched([sys.executable, "-c", IMPORTING], default_signals=AS_TYPED), cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.split("\n")[:2] == ["imported True True", "stopped after the import 143"]


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_after_the_last_record_ends_the_run_by_the_signal_without_a_traceback(classroom, number, tmp_path):
    """Before: a signal that came once the report was written (while the workers and fork servers were being
    closed at exit) was raised inside an exit handler: "Exception ignored in atexit callback ... Stopped:
    SIGTERM" and exit 0, as if nothing had come (found by a blind tester, 3 of 3). Now it is kept: one line says
    every record was written, and the run exits 128 + the signal, as a stopped run does."""
    for attempt in range(6):  # the window after the report line is short: a run that closed within it is tried again
        out = tmp_path / f"out{attempt}"
        process = subprocess.Popen(launched([sys.executable, "-m", "grader", *GRADE[:1], classroom, "--out", out,
                                             *GRADE[1:]], default_signals=AS_TYPED),
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        for line in process.stdout:
            if line.startswith("report:"):
                break
        time.sleep(0.05 / (attempt + 1) ** 2)  # shorter each try: a fast machine closes a run in under 50 ms
        if process.poll() is None:
            try:
                os.killpg(process.pid, number)
            except ProcessLookupError:  # every process of the run ended in between
                pass
        stdout, stderr = process.communicate(timeout=120)
        if process.returncode != 0:  # the signal landed (a run it missed ended by itself, with 0)
            break
    else:
        pytest.fail("the run ended before it could be signalled, 6 times")
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert process.returncode == 128 + number, (process.returncode, stderr)
    assert LATE in stderr, stderr
    assert (out / "grades.csv").is_file()
