"""Student processes cannot outlive their verdict, read the secrets, or write the results.

These run the real sandbox: with a uid of the worker's own (as when the grader
runs as root, e.g. on Gradescope) and without (a laptop), where the PID namespace
(or, without namespaces, the subreaper and fork-server nets) must catch what
escaped the process group.
"""

import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from grader.sandbox import processes
from grader.judging.judge import Options, grade_submission
from grader.check.student import Student
from grader.paths import ROOT
from grader.sandbox.worker import WorkerTransport

ISOLATION = [pytest.param(False, id="same-uid")] + (
    [pytest.param(True, id="own-uid")] if processes.running_as_root() else [])

# Spawned from inside a graded step: a grandchild that leaves the process group and
# the session (double fork + setsid), names itself (so that the test can see it from
# outside, where a sealed worker cannot write), then keeps touching a heartbeat file
# and tries to overwrite the results file once grading is over.
ESCAPE = '''

def _escape(heartbeat, target):
    import ctypes, os, time
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    ctypes.CDLL(None).prctl(15, NAME.encode(), 0, 0, 0)  # PR_SET_NAME
    for _ in range(100):
        try:
            open(heartbeat, "w").write(str(time.time()))
        except OSError:
            pass
        time.sleep(0.05)
    try:
        open(target, "w").write('{"score": 100}')
    finally:
        os._exit(0)


_original_project = project


def project(*args, **kwargs):
    _escape(HEARTBEAT, TARGET)
    return _original_project(*args, **kwargs)
'''


def heartbeat_age(path):
    return time.time() - path.stat().st_mtime if path.exists() else None


def named(name):
    """Pids of the processes that call themselves `name` (their comm)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and open(f"/proc/{entry}/comm").read().strip() == name:
                found.append(int(entry))
        except OSError:
            pass
    return found


class Watch(threading.Thread):
    """Records whether a process called `name` ever ran while the watch was on."""

    def __init__(self, name):
        super().__init__(daemon=True)
        self.name, self.seen, self.done = name, False, threading.Event()

    def run(self):
        while not self.done.is_set():
            self.seen = self.seen or bool(named(self.name))
            self.done.wait(0.02)


@pytest.mark.parametrize("isolate_user", ISOLATION)
def test_detached_processes_die_before_the_verdict(tmp_path, suite, clean, isolate_user):
    # Outside pytest's private tmp folder, open to all: an own-uid worker could write here if it were still alive.
    shared = Path(tempfile.mkdtemp(prefix="escape-", dir="/tmp"))
    shared.chmod(0o777)
    heartbeat, target = shared / "heartbeat", shared / "results.json"
    target.write_text("genuine")
    target.chmod(0o666)
    name = f"esc{uuid.uuid4().hex[:12]}"
    source = (f"HEARTBEAT = {str(heartbeat)!r}\nTARGET = {str(target)!r}\nNAME = {name!r}\n" + clean
              + ESCAPE)
    path = tmp_path / "attention.py"
    path.write_text(source)
    projection_tests = [test for test in suite if test.step == "projection"]
    watch = Watch(name)
    watch.start()
    try:
        result = grade_submission(path, "escape", projection_tests, Options(isolate_user=isolate_user))
    finally:
        watch.done.set()
        watch.join()
    assert result.score == sum(test.points for test in projection_tests)  # the attack changes nothing
    assert watch.seen, "the escape never ran: this test checks nothing"
    time.sleep(1.0)
    assert not named(name), "a process started by the student's code outlived grading"
    assert heartbeat_age(heartbeat) is None or heartbeat_age(heartbeat) > 0.8, (
        "a process started by the student's code outlived grading")
    time.sleep(5.0)
    assert target.read_text() == "genuine"
    shutil.rmtree(shared)


PROBE = '''
import os
import torch


def probe(paths):
    """1.0 for each path this process can read, then its uid."""
    readable = []
    for path in paths:
        try:
            open(path).read(1)
            readable.append(1.0)
        except OSError:
            readable.append(0.0)
    return torch.tensor(readable + [float(os.getuid())])


def can_write(path):
    try:
        open(path, "w").write("forged")
        return torch.tensor(1.0)
    except OSError:
        return torch.tensor(0.0)
'''


@pytest.mark.skipif(not processes.running_as_root(), reason="an own uid for student code needs a root grader")
def test_student_code_runs_unprivileged_and_cannot_read_secrets(tmp_path):
    path = tmp_path / "attention.py"
    path.write_text(PROBE)
    os.chmod(tmp_path, 0o700)  # a private folder, like an unpacked zip: the worker reads it before dropping
    secrets = [ROOT / "tests" / "hidden" / "oracle.py", ROOT / "solutions" / "attention.py",
               ROOT / "tests" / "public" / "chapter_data.py"]
    results = tmp_path / "results.json"
    results.write_text("genuine")
    worker = WorkerTransport(path, isolate_user=True)
    try:
        student = Student(worker)
        answer = student.call("probe", [str(p) for p in secrets]).tolist()
        assert answer[:-1] == [0.0, 0.0, 0.0], f"student code could read {answer}"
        assert answer[-1] >= processes.UID_BASE
        assert student.call("can_write", str(results)).item() == 0.0
    finally:
        worker.close()
    assert results.read_text() == "genuine"
    assert os.access(secrets[0], os.R_OK)  # the judge itself still reads them
