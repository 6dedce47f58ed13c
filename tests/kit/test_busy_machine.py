"""A correct file keeps its grade on a saturated machine.

Before: a step's time limit was wall-clock time, so a file whose loading needs 0.8 s of CPU, graded on one CPU
that other programs keep busy, ran past a 2 s limit and scored 0 ("an infinite loop?"), while the same
file scored full marks on a quiet machine (a blind tester: `import matplotlib.pyplot` took 10 s at load 12 on 2
cores). Now the limit counts the time the submission ran or slept, not the time it waited for a CPU others
held (grader.sandbox.transport.MAX_CPU_WAIT_CREDIT), and a hang still ends.
"""

import csv
import os
import subprocess
import sys

import pytest

from grader.chapter import TOTAL_POINTS
from grader.paths import ROOT

pytestmark = pytest.mark.slow(reason="grades through `python -m grader` on one CPU kept busy by other processes")

LOAD_CPU_SECONDS = 1.2  # of the 2 s limit: past it in wall time unless the CPU is 60 % the grader's
BUSY_LOAD = f"""
import time as _time
_began = _time.process_time()
while _time.process_time() - _began < {LOAD_CPU_SECONDS}:
    pass
"""
HANG = "\n\ndef causal_mask(context_length):\n    while True:\n        pass\n"
# Busy loops on the grader's CPU, each in a session of its own: the kernel shares a CPU between sessions
# (autogroups) or between processes, so the submission gets at most a fifth of it either way.
HOGS = 4
ONE_CPU = {sorted(os.sched_getaffinity(0))[0]} if hasattr(os, "sched_getaffinity") else None


def on_one_cpu():
    os.sched_setaffinity(0, ONE_CPU)


def grade_on_a_busy_cpu(folder, out):
    """`python -m grader grade folder` on one CPU that busy loops share with it: {name: total}."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=on_one_cpu, start_new_session=True)
            for _ in range(HOGS)]
    try:
        done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), "--jobs", "1",
                               "--time-limit", "2"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                              preexec_fn=on_one_cpu)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "grades.csv", newline="") as stream:
        return {row["submission"]: float(row["total"]) for row in csv.DictReader(stream)}


@pytest.mark.skipif(ONE_CPU is None, reason="needs sched_setaffinity (Linux)")
def test_a_file_that_loads_slowly_on_a_busy_machine_keeps_full_marks_and_a_hang_still_ends(clean, tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "slow_loader.py").write_text(BUSY_LOAD + clean)
    (folder / "hangs.py").write_text(clean + HANG)
    totals = grade_on_a_busy_cpu(folder, tmp_path / "out")
    assert totals["slow_loader"] == TOTAL_POINTS, totals
    assert totals["hangs"] < TOTAL_POINTS, totals
