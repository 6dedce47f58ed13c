"""A step's points are one edit of grader/chapter.py: grading, the kit's tests and the report follow it."""

import csv
import json
import os
import re
import subprocess
import sys

import pytest

from grader.chapter import BY_KEY, TOTAL_POINTS
from grader.paths import ROOT

pytestmark = pytest.mark.slow(
    reason="changes the points in a kit copy and runs make generate, the kit's tests and a class run there")

STEP, NEW_POINTS = "masking", BY_KEY["masking"].points + 10


@pytest.fixture(scope="module")
def kit_copy(tmp_path_factory):
    """The kit as it is now (tracked and new files), with one step's points changed in grader/chapter.py."""
    copy = tmp_path_factory.mktemp("kit")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            (copy / name).write_bytes(source.read_bytes())
    chapter = copy / "grader" / "chapter.py"
    text, count = re.subn(rf'(Step\("{STEP}", .*?\), )(\d+)(,)', rf"\g<1>{NEW_POINTS}\g<3>", chapter.read_text(),
                          flags=re.S)
    assert count == 1, "the step's points are written once, in its Step(...)"
    chapter.write_text(text)
    return copy


def run(copy, *command, timeout=900):
    env = {**os.environ, "SUBMISSION": "solutions/attention.py"}
    done = subprocess.run(command, cwd=copy, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done


def test_the_kits_own_tests_follow_the_new_points(kit_copy):
    """The tests that check totals (full marks, LMS points, nbgrader cells...) read them from the chapter."""
    run(kit_copy, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "tests/kit/test_grading.py", "tests/kit/test_lms.py", "-k", "not canvas_zip")


def test_grading_and_the_report_agree_on_the_new_points(kit_copy, tmp_path):
    out = tmp_path / "out"
    run(kit_copy, sys.executable, "-m", "grader", "grade", "--out", str(out))
    new_total = TOTAL_POINTS - BY_KEY[STEP].points + NEW_POINTS
    rows = {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert float(rows["ada_lovelace"]["total"]) == new_total
    assert float(rows["ada_lovelace"][STEP]) == NEW_POINTS
    data = json.loads((out / "results" / "ada_lovelace.json").read_text(encoding="utf-8"))
    assert data["extra_data"]["max_steps"][STEP] == NEW_POINTS and data["score"] == new_total
    report = (out / "report.html").read_text(encoding="utf-8")
    assert f"(out of {new_total:g})" in report


def test_every_tests_points_are_whole_hundredths():
    """A step's weights share out its points exactly: every score a student can get is written in
    whole hundredths in grades.csv and the LMS files (10 points over weights summing to 12 would not be)."""
    from grader.check.suite import discover, max_points

    for test in discover():
        assert abs(test.points * 100 - round(test.points * 100)) < 1e-9, (
            f"{test.name!r} is worth {test.points!r} points: make its step's weights share out "
            f"{BY_KEY[test.step].points} points in hundredths")
    for key, total in max_points(discover()).items():
        assert abs(total - BY_KEY[key].points) < 1e-9, key
