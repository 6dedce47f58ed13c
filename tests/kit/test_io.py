"""What the grader writes, as the people around it expect: OUT readable by the course team's group
(the umask decides), a full disk or a busy OUT ending in one line with every result kept and a clean
resume, progress that fits the terminal, links that are quoted."""

import errno
import fcntl
import json
import os
import pty
import re
import select
import shutil
import stat
import struct
import subprocess
import sys
import termios
import time
import uuid
from pathlib import Path
from urllib.parse import unquote

import pytest

from grader.cohort import progress as progress_module
from grader.cohort.bulk import LOCK_NAME, OutBusy, holding
from grader.feedback import report
from grader.outfiles import OutputError, write_atomic
from grader.paths import ROOT


def run_grader(*args, umask=None, prefix=(), timeout=600):
    """`python -m grader ARGS` (or `python -c PREFIX... ARGS`) from the repository, with `umask` if given."""
    command = [sys.executable, *(prefix or ["-m", "grader"]), *map(str, args)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          umask=-1 if umask is None else umask)  # set by subprocess itself: no preexec_fn


def error_lines(done):
    """The lines of stderr that report an error; a traceback never appears."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return [line for line in done.stderr.splitlines() if line.startswith("error:") or ": error:" in line]


@pytest.fixture(scope="module")
def small_class(tmp_path_factory, clean, solution_notebook):
    """Three submissions: the solution as a .py and as a notebook, and one with a bug."""
    folder = tmp_path_factory.mktemp("small_class")
    (folder / "ada.py").write_text(clean)
    (folder / "grace.ipynb").write_text(solution_notebook)
    (folder / "alan.py").write_text(clean.replace("diagonal=1", "diagonal=0"))
    return folder


def results_texts(out):
    return {path.name: path.read_text() for path in sorted((Path(out) / "results").glob("*.json"))}


# --------------------------------------------------------------------------- permissions

@pytest.mark.parametrize("umask, file_mode, folder_mode", [(0o002, 0o664, 0o775), (0o027, 0o640, 0o750),
                                                            (0o077, 0o600, 0o700)])
def test_write_atomic_honours_the_umask(tmp_path, umask, file_mode, folder_mode):
    old = os.umask(umask)
    try:
        target = tmp_path / "new" / "grades.csv"
        write_atomic(target, "a\n")
        write_atomic(target, "b\n")  # replacing keeps it atomic: the old or the new text, never half
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == file_mode
    assert stat.S_IMODE(target.parent.stat().st_mode) == folder_mode
    assert target.read_text() == "b\n" and [p.name for p in target.parent.iterdir()] == ["grades.csv"]


@pytest.mark.slow(reason='a class run through `python -m grader grade` under a umask')
def test_a_class_graded_under_umask_002_is_group_readable_and_not_world_writable(small_class, tmp_path):
    out = tmp_path / "out"
    done = run_grader("grade", small_class, "--out", out, "--jobs", "2", umask=0o002)
    assert done.returncode == 0, done.stderr[-3000:]
    written = [path for path in out.rglob("*")]
    assert {"grades.csv", "report.html", "ada.json", "grace.html"} <= {path.name for path in written}
    for path in [out, *written]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode & stat.S_IRGRP and not mode & stat.S_IWOTH, (path, oct(mode))
        if path.is_dir():
            assert mode & stat.S_IXGRP, (path, oct(mode))
    hrefs = re.findall(r"href=(['\"])(.*?)\1", (out / "report.html").read_text())
    assert hrefs and all(re.fullmatch(r"[A-Za-z0-9._~%/-]+", href) for _, href in hrefs), hrefs


# --------------------------------------------------------------------------- a full disk

FULL_AFTER = """
import errno, os, sys
# The disk fills up after {count} results files: every later write into results/ fails with ENOSPC.
real, written = os.replace, []
def replace(source, target, *args, **kwargs):
    if os.sep + "results" + os.sep in str(target):
        if len(written) >= {count}:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(target)
    return real(source, target, *args, **kwargs)
os.replace = replace
from grader.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow(reason='two class runs through `python -m grader`, the first with a full disk')
def test_a_full_disk_ends_in_one_line_keeps_every_result_and_the_rerun_resumes(small_class, tmp_path):
    out = tmp_path / "out"
    done = run_grader("grade", small_class, "--out", out, "--jobs", "1", prefix=["-c", FULL_AFTER.format(count=1)])
    assert done.returncode == 1, done.stderr[-3000:]
    [line] = error_lines(done)
    assert "No space left on device" in line and str(out / "results") in line and "run the same command again" in line
    kept = results_texts(out)
    assert len(kept) == 1 and all(json.loads(text)["tests"] for text in kept.values())
    assert not [path for path in out.rglob("*.tmp")], "a failed write leaves no temporary file behind"
    again = run_grader("grade", small_class, "--out", out, "--jobs", "1")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming: 1 of 3 already graded" in again.stderr
    after = results_texts(out)
    assert len(after) == 3 and all(after[name] == text for name, text in kept.items())
    assert (out / "grades.csv").is_file() and (out / "report.html").is_file()


def mount_small_filesystem(folder, size):
    """A tmpfs of `size` at `folder` (root only); False where it cannot be mounted."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


@pytest.mark.slow(reason='class runs through `python -m grader` on a small tmpfs')
def test_a_really_full_filesystem_ends_in_one_line_and_a_bigger_one_resumes(small_class, tmp_path):
    disk = tmp_path / "disk"
    if not mount_small_filesystem(disk, "48k"):
        pytest.skip("mounting a small filesystem needs root (the simulated ENOSPC test above runs everywhere)")
    try:
        out = disk / "out"
        done = run_grader("grade", small_class, "--out", out, "--jobs", "1")
        assert done.returncode == 1, done.stderr[-3000:]
        [line] = error_lines(done)
        assert "No space left on device" in line and str(out) in line
        kept = results_texts(out)
        assert all(json.loads(text)["tests"] for text in kept.values())  # whatever was written is whole
        subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True)
        again = run_grader("grade", small_class, "--out", out, "--jobs", "1")
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(results_texts(out)) == 3 and all(results_texts(out)[name] == text for name, text in kept.items())
        if kept:
            assert f"resuming: {len(kept)} of 3 already graded" in again.stderr
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_an_unwritable_out_is_refused_before_grading(small_class, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    done = run_grader("grade", small_class, "--out", blocked / "out")
    assert done.returncode == 2
    [line] = error_lines(done)
    assert f"--out {blocked / 'out'}: cannot write there" in line


def test_write_atomic_names_the_file_it_could_not_write(tmp_path):
    (tmp_path / "taken").write_text("a file where a folder should be")
    with pytest.raises(OutputError, match=r"cannot write .*taken/report.html: File exists"):
        write_atomic(tmp_path / "taken" / "report.html", "x")


# --------------------------------------------------------------------------- two runs, one OUT

@pytest.mark.slow(reason='two concurrent `python -m grader` class runs')
def test_a_second_run_into_a_busy_out_stops_at_once_and_the_first_keeps_going(small_class, tmp_path):
    slow = tmp_path / "slow_class"
    shutil.copytree(small_class, slow)
    # Graded first (names are graded in order), and slow: two steps that run into their time limit.
    (slow / "a_slow.py").write_text("import time\n\n\n" + "".join(
        f"def {name}(*args, **kwargs):\n    time.sleep(60)\n\n\n" for name in ("init_qkv_weights", "causal_mask")))
    out = tmp_path / "out"
    first = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(slow), "--out", str(out), "--jobs", "1",
                              "--time-limit", "3"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 120
        while f"process {first.pid}," not in ((out / LOCK_NAME).read_text() if (out / LOCK_NAME).exists() else ""):
            assert first.poll() is None and time.monotonic() < deadline, "the first run never took OUT"
            time.sleep(0.2)
        second = run_grader("grade", slow, "--out", out, "--jobs", "1", "--time-limit", "3")
        assert first.poll() is None, "the first run ended before the second started: make it slower"
    finally:
        first_stderr = first.communicate(timeout=300)[1]
    assert second.returncode == 1
    [line] = error_lines(second)
    assert f"is in use by another grading run (process {first.pid}," in line and "give another --out" in line
    assert "graded" not in second.stderr  # it graded nothing
    assert first.returncode == 0, first_stderr[-3000:]
    written = results_texts(out)
    assert len(written) == 4
    again = run_grader("grade", slow, "--out", out, "--jobs", "1", "--time-limit", "3")  # the same settings
    assert again.returncode == 0 and "resuming: 4 of 4 already graded" in again.stderr, again.stderr[-3000:]
    assert results_texts(out) == written


def test_the_lock_belongs_to_the_run_and_ends_with_it(tmp_path):
    with holding(tmp_path):
        with pytest.raises(OutBusy, match=f"process {os.getpid()},"):
            with holding(tmp_path):
                pass
        ready, started = os.pipe()
        child = os.fork()  # a judge: it must not hold OUT on after the run is gone
        if child == 0:
            os.write(started, b".")  # the fork's own handlers have run
            time.sleep(5)
            os._exit(0)
        os.read(ready, 1)
        os.close(ready), os.close(started)
    try:
        with holding(tmp_path):  # released when the run ends, although the child it forked lives on
            pass
        assert os.waitpid(child, os.WNOHANG) == (0, 0), "the child is still running"
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


# --------------------------------------------------------------------------- the terminal

def test_progress_lines_fit_the_terminal_width():
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    stream = os.fdopen(terminal, "w", encoding="utf-8")
    try:
        bar = progress_module.Progress(3, skipped=1, stream=stream)
        assert bar.terminal
        bar.advance("a_student_with_a_very_long_name_" + "x" * 60, 91.5, 100, 1.2, note="2 test(s) hit a limit")
        bar.advance("名前" * 30, 100, 100, 0.8)
        bar.finish()
        stream.flush()
        written = b""
        while select.select([controller], [], [], 0.5)[0]:  # a terminal hands its output over in pieces
            written += os.read(controller, 65536)
        written = written.decode()
    finally:
        stream.close()
        os.close(controller)
    shown = [part.replace("\x1b[K", "") for line in written.replace("\r\n", "\n").split("\n") for part in line.split("\r")]
    assert any("resuming" in part for part in shown) and any("名" in part for part in shown)
    assert max(sum(map(progress_module.columns_of, part)) for part in shown) <= 39, shown


def test_fit_counts_wide_characters_as_two_columns():
    assert progress_module.fit("abcdef", 10) == "abcdef"
    assert progress_module.fit("abcdef", 4) == "abc…"
    assert progress_module.fit("名前名前", 5) == "名前…"


# --------------------------------------------------------------------------- links and statistics

def test_report_links_are_quoted(tmp_path):
    name = "o'brien #1 <b>&"
    (tmp_path / "feedback").mkdir()
    (tmp_path / "feedback" / f"{name}.html").write_text("page")
    link = report.example_links([name, "plain"], tmp_path)
    href = re.search(r"href='([^']*)'", link).group(1)
    assert href == "feedback/o%27brien%20%231%20%3Cb%3E%26.html" and unquote(href) == f"feedback/{name}.html"
    assert "plain" in link and link.count("<a ") == 1  # no page, no link


def test_discrimination_is_pearsons_r_from_the_standard_library():
    assert report.correlation([1, 0, 1, 0], [9, 2, 8, 1]) == pytest.approx(7 / 50 ** 0.5)
    assert report.correlation([1, 1, 1, 1], [9, 2, 8, 1]) is None  # everyone passed: it says nothing
    assert report.correlation([1, 0], [2, 1]) is None
