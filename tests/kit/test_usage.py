"""Every bad argument of every entry point ends with one readable line and exit status 2, never a
traceback: `python -m grader grade|merge|report|generate|publish|regrade`, `python check.py` in the
student's release, and `make` variables that reach the grader."""

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from grader.paths import ROOT
from tests.kit.project import shell_env

# Runs many command lines in one interpreter (each as `sys.exit(main(argv))` would), so the suite
# imports torch once: {argv as JSON: [exit status, stderr]}.
DRIVER = textwrap.dedent("""
    import contextlib, io, json, sys, traceback
    from grader.cli import main
    results = {}
    for argv in json.loads(sys.argv[1]):
        stderr, stdout = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            try:
                status = main(argv)
            except SystemExit as stop:
                status = stop.code
            except BaseException:
                status, _ = "traceback", traceback.print_exc()
        results[json.dumps(argv)] = [status, stderr.getvalue()]
    print(json.dumps(results))
""")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, clean):
    """Files the bad command lines point at: one good submission and many bad inputs."""
    root = tmp_path_factory.mktemp("usage")
    (root / "good.py").write_text(clean)
    (root / "notes.txt").write_text("not code")
    (root / "a_file").write_text("a file, not a folder")
    (root / "broken.zip").write_bytes(b"PK\x03\x04 not really a zip")
    (root / "roster.csv").write_text("nothing,useful\n1,2\n")
    (root / "roster.bin").write_bytes(b"\xff\xfe\x00\x00")
    bad_manifest = root / "bad_manifest"
    bad_manifest.mkdir()
    (bad_manifest / "shard.json").write_text('{"shard": "x"}')
    traversal = root / "traversal"
    traversal.mkdir()
    (traversal / "shard.json").write_text('{"shard": 1, "of": 1, "submissions": ["../../etc/passwd"]}')
    bad_results = root / "bad_results"
    (bad_results / "results").mkdir(parents=True)
    (bad_results / "shard.json").write_text('{"shard": 1, "of": 1, "submissions": ["bob"]}')
    (bad_results / "results" / "bob.json").write_text("{not json")
    odd_results = root / "odd_results"
    (odd_results / "results").mkdir(parents=True)
    (odd_results / "results" / "carol.json").write_text(json.dumps({"score": "lots", "tests": {}}))
    return root


def command_lines(root):
    good = str(root / "good.py")
    return {
        "grade": [
            ["grade", good, "--memory-limit", "2 gigs"], ["grade", good, "--memory-limit", "1"],
            ["grade", good, "--jobs", "0"], ["grade", good, "--jobs", "many"],
            ["grade", good, "--time-limit", "-1"], ["grade", good, "--time-limit", "nan"],
            ["grade", good, "--time-limit", "0.05"], ["grade", good, "--submission-time-limit", "3"],
            ["grade", good, "--submission-time-limit", "1e300"],
            ["grade", str(root), "--shard", "5/4"], ["grade", str(root), "--shard", "one/two"],
            ["grade", good, "--device", "tpu"], ["grade", good, "--engine", "moss"],
            ["grade", str(root / "missing.py")], ["grade", str(root / "notes.txt")],
            ["grade", str(root / "broken.zip")], ["grade", good, "--out", str(root / "a_file" / "out")],
            ["grade", good, "--results", str(root / "a_file" / "results.json")],
            ["grade", good, "--roster", str(root / "roster.csv")], ["grade", good, "--roster", str(root / "roster.bin")],
            ["grade", good, "--roster", str(root / "missing.csv")], ["grade", good, "--no-such-option"]],
        "merge": [
            ["merge"], ["merge", str(root / "missing"), "--out", str(root / "merged")],
            ["merge", str(root / "bad_manifest"), "--out", str(root / "merged")],
            ["merge", str(root / "traversal"), "--out", str(root / "merged")],
            ["merge", str(root / "bad_results"), "--out", str(root / "merged")],
            ["merge", str(root / "bad_results"), "--roster", str(root / "roster.csv")]],
        "report": [
            ["report", "--out", str(root / "missing")], ["report", "--out", str(root / "odd_results")],
            ["report", "--out", str(root / "a_file")], ["report", "--pages", "now"]],
        "generate": [["generate", "extra"], ["generate", "--check", "now"], ["generate", "--force"]],
        "publish": [["publish", "nonsense", "--dist", str(root / "dist")], ["publish", "--dist"],
                    ["publish", "student", "--dist", str(root / "a_file" / "dist")], ["publish", "--zip"]],
        "regrade": [["regrade"], ["regrade", "bob", "--out", str(root / "missing")],
                    ["regrade", "bob", "--out", str(root), "--jobs", "lots"]],
        "no command": [[], ["bogus"], ["--verbose", "grade"]],
    }


@pytest.fixture(scope="module")
def answered(inputs):
    lines = [argv for group in command_lines(inputs).values() for argv in group]
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(lines)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("command", ["grade", "merge", "report", "generate", "publish", "regrade", "no command"])
def test_every_bad_argument_ends_in_one_line_and_exit_2(answered, inputs, command):
    cases = command_lines(inputs)[command]
    assert len(cases) >= 3
    wrong = {}
    for argv in cases:
        status, stderr = answered[json.dumps(argv)]
        errors = [line for line in stderr.splitlines() if "error:" in line]  # notes may come before it
        if status != 2 or "Traceback" in stderr or len(errors) != 1 or len(errors[0]) > 600:
            wrong[" ".join(argv)] = (status, stderr[-600:])
    assert not wrong, wrong


def test_the_exit_status_is_the_process_s(inputs):
    """The same through a real process: the status and the one line are what a shell sees."""
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(inputs / "good.py"), "--memory-limit", "2 gigs"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--memory-limit" in done.stderr, done.stderr


TEMPLATE = ROOT / "student_template"


@pytest.mark.parametrize("argv", [["nosuchstep"], ["masking", "missing.py"], ["masking", "a.py", "extra"],
                                  ["--no-such-option"], ["masking", "dropout"],
                                  ["--device", "tpu"], ["--device", "meta"]],
                         ids=lambda argv: " ".join(argv))
def test_check_py_answers_bad_arguments_in_one_line(argv):
    done = subprocess.run([sys.executable, "check.py", *argv], cwd=TEMPLATE, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    errors = [line for line in (done.stdout + done.stderr).splitlines() if "error:" in line]
    assert len(errors) == 1, done.stdout + done.stderr


def test_check_py_piped_ends_without_a_traceback():
    """A blind student (2026-11-28): `python check.py | head -1` ended in BrokenPipeError from the checker's code."""
    piped = subprocess.run(f"{sys.executable} check.py | head -1", shell=True, cwd=TEMPLATE, capture_output=True,
                           text=True, timeout=300)
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr, piped.stderr[-2000:]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("variables", [["SHARD=x"], ["JOBS=lots"], ["DEVICE=tpu"], ["MEMORY_LIMIT=2gigs"]],
                         ids=lambda variables: " ".join(variables))
def test_make_variables_that_reach_the_grader_end_in_its_one_line(variables, inputs):
    # -o: do not (re)install .venv here; the grader's own answer is what is tested.
    done = subprocess.run(["make", "-s", "-o", ".venv/.installed", "grade", f"SUBMISSION={inputs / 'good.py'}",
                           f"OUT={inputs / 'make_out'}", *variables], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=shell_env())
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert len([line for line in done.stderr.splitlines() if "error:" in line]) == 1, done.stderr


def test_left_out_jobs_are_two_per_core_and_at_most_eight_on_a_gpu():
    """Each GPU worker holds a CUDA context in the GPU's memory: the H200 run graded as fast with 8 at once as with
    32 (docs/sandbox.md, "On a GPU"), so a GPU run starts no more unless --jobs asks."""
    import argparse

    from grader.cli import CUDA_JOBS, DEFAULT_JOBS, add_grading_options, default_jobs

    parser = argparse.ArgumentParser()
    add_grading_options(parser)
    assert parser.parse_args([]).jobs is None and parser.parse_args(["--jobs", "32"]).jobs == 32
    assert default_jobs("cpu") == DEFAULT_JOBS
    assert default_jobs("cuda") == default_jobs("cuda:1") == min(DEFAULT_JOBS, CUDA_JOBS) == min(DEFAULT_JOBS, 8)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a machine with a GPU can grade on it")
@pytest.mark.parametrize("command", ["grade", "regrade"])
def test_a_device_this_torch_cannot_use_is_refused_before_grading(command, tmp_path):
    """Blind gradebook review (round 5): `make grade DEVICE=cuda` with the kit's CPU build of torch graded every
    correct submission 13.5 ("Torch not compiled with CUDA enabled", told as the student's own error), wrote that
    into the Canvas file and exited 0; so did `cuda:1` on a one-GPU machine."""
    out = tmp_path / "out"
    if command == "regrade":
        folder = tmp_path / "class"
        folder.mkdir()
        for name in ("alice", "bob"):
            shutil.copy(ROOT / "solutions" / "attention.py", folder / f"{name}.py")
        done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out)], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        argv = ["regrade", "alice", "--out", str(out), "--device", "cuda"]
    else:
        argv = ["grade", str(ROOT / "solutions" / "attention.py"), "--out", str(out), "--device", "cuda"]
    before = sorted(path.name for path in out.rglob("*")) if out.exists() else []
    done = subprocess.run([sys.executable, "-m", "grader", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 2 and "DEVICE=cuda cannot be used here" in done.stderr, done.stderr[-2000:]
    assert (sorted(path.name for path in out.rglob("*")) if out.exists() else []) == before


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_takes_paths_with_spaces_parentheses_and_quotes(tmp_path):
    """Blind gradebook review (round 5): `SUBMISSION=".../submissions (1).zip"` (a browser's second download) gave
    `/bin/sh: Syntax error: "(" unexpected`, and `OUT=".../my out"` "unrecognized arguments"."""
    folder = tmp_path / "my class (1)"
    folder.mkdir()
    shutil.copy(ROOT / "solutions" / "attention.py", folder / "o'brien.py")
    shutil.copy(ROOT / "solutions" / "attention.py", folder / "ada.py")
    out = tmp_path / "my out (2)"
    done = subprocess.run(["make", "-s", "-o", ".venv/.installed", "grade", f"SUBMISSION={folder}", f"OUT={out}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=shell_env())
    assert done.returncode == 0 and (out / "grades.csv").is_file(), done.stderr[-2000:]
    done = subprocess.run(["make", "-s", "-o", ".venv/.installed", "regrade", "STUDENT=o_brien", f"OUT={out}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=shell_env())
    assert done.returncode == 0, done.stderr[-2000:]
