"""OUT is the grader's: created by the grader's user before any student code runs, and refused when
someone else made it first (a submission can read the judge's command line in /proc and create OUT
in a world-writable place before the grader does)."""

import os
import pwd
import subprocess
import sys

import pytest

from grader.cohort.bulk import foreign_out
from grader.paths import ROOT

OTHER = "kittest"


def other_uid():
    try:
        return pwd.getpwnam(OTHER).pw_uid
    except KeyError:
        return None


def grade(tmp_path, out, clean):
    folder = tmp_path / "class"
    folder.mkdir(exist_ok=True)
    (folder / "alice.py").write_text(clean)
    return subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), "--jobs", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_a_new_out_is_created_by_the_grader_and_a_world_writable_one_is_refused(tmp_path):
    out = tmp_path / "out"
    assert foreign_out(out) is None  # not there yet: the grader creates it
    out.mkdir()
    assert foreign_out(out) is None
    out.chmod(0o777)
    assert "can be written by every user" in foreign_out(out)
    out.chmod(0o1777)  # sticky, like /tmp: no one may replace another's files
    assert foreign_out(out) is None
    out.chmod(0o755)
    (out / "results").mkdir()
    (out / "results").chmod(0o777)
    assert "results can be written by every user" in foreign_out(out)


@pytest.mark.skipif(os.geteuid() != 0 or other_uid() is None, reason=f"needs root and a user {OTHER!r}")
@pytest.mark.slow(reason="a `python -m grader` launch (it refuses after the sandbox's probe, so not in this process)")
def test_an_out_someone_else_made_first_is_refused_with_a_clear_message(tmp_path, clean):
    out = tmp_path / "out"
    out.mkdir()
    os.chown(out, other_uid(), -1)
    done = grade(tmp_path, out, clean)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"belongs to user {OTHER}, not to user root who grades" in done.stderr, done.stderr[-2000:]
    assert "give another --out" in done.stderr
    assert list(out.iterdir()) == []  # nothing was graded into it
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "mine")
    os.lchown(link, other_uid(), -1)  # a link someone else can point anywhere
    (tmp_path / "mine").mkdir()
    assert "belongs to user kittest" in foreign_out(link)
