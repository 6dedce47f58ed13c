"""dist/gradescope/autograder.zip, run end to end in a temporary /autograder layout.

Its run_autograder must give, per step, exactly what the kit's grader gives on
the same file: it is the kit's grader, run from the unpacked zip.
"""

import json
import os
import stat
import subprocess
import sys
import time
import zipfile

import pytest
from grader.faults.bugs import BUGS

from grader.integrations import gradescope
from grader.chapter import STEP_KEYS
from grader.chapter import BY_KEY, TOTAL_POINTS
from grader.paths import ROOT

pytestmark = pytest.mark.slow(
    reason="builds the Gradescope zip and runs its run_autograder per case, beside the kit's grades")

TIME_LIMIT = 60  # generous: a loaded test machine must not turn a slow step into a failed one
BUG = next(bug for bug in BUGS if bug.id == "masking_not_renormalised")


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    return gradescope.build(tmp_path_factory.mktemp("dist"))[0]


def run_autograder(autograder_zip, root, files):
    """Lay out `root` like /autograder (source/ from the zip, submission/ from `files`) and run it."""
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    for name, text in files.items():
        target = root / "submission" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (root / "submission").mkdir(exist_ok=True)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable,
           "AUTOGRADER_TIME_LIMIT": str(TIME_LIMIT)}
    started = time.monotonic()
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=300)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text()), seconds


def steps_of(results):
    scores = {key: 0.0 for key in STEP_KEYS}
    for test in results["tests"]:
        scores[test["name"].split(":")[0]] += test["score"]
    return scores


def test_zip_holds_the_grader_tests_and_pinned_cpu_requirements(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as archive:
        names = set(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        requirements = archive.read("requirements.txt").decode()
        setup = archive.read("setup.sh").decode()
    assert {"setup.sh", "run_autograder", "requirements.txt", "grader/cli.py", "tests/hidden/oracle.py",
            "grader/check/book.py"} <= names
    assert not any(name.startswith(("solutions/", "tests/kit/", "tests/catalogue/")) for name in names)
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert "torch==2.13.0+cpu" in requirements.splitlines()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in requirements.splitlines()
    assert "python=3.11" in setup


@pytest.mark.parametrize("case", ["solution", "stub_notebook", "bug"])
def test_run_autograder_agrees_with_the_kit_grader(case, autograder_zip, tmp_path, grade, clean, stub):
    from grader.build.exercises import code_sections, notebook

    name, text = {
        "solution": ("attention.py", clean),
        "stub_notebook": ("attention.ipynb", notebook(code_sections(stub))),
        "bug": ("attention.py", BUG.apply(clean)),
    }[case]
    # Gradescope keeps uploaded folders: the file may sit deeper, next to other files.
    results, seconds = run_autograder(autograder_zip, tmp_path / "autograder",
                                      {f"my work/{name}": text, "notes.txt": "not code"})
    kit = grade(text, name=name, step_seconds=TIME_LIMIT)
    print(f"{case}: run_autograder {seconds:.1f}s, kit grader {kit.seconds:.1f}s")
    assert steps_of(results) == kit.step_scores(), (
        [(t["name"], t["output"]) for t in results["tests"] if t["score"] < t["max_score"]],
        [(t.name, t.output) for t in kit.tests if t.score < t.max_score])
    assert results["score"] == pytest.approx(kit.score)
    assert {"projection", "masking"} <= {t["name"].split(":")[0] for t in results["tests"]}
    if case == "solution":
        assert results["score"] == TOTAL_POINTS
    elif case == "stub_notebook":
        assert results["score"] == 0
    else:
        assert 0 < steps_of(results)[BUG.step] < BY_KEY[BUG.step].points and results["score"] < TOTAL_POINTS


def test_submission_without_code_gets_zero_with_a_reason(autograder_zip, tmp_path):
    results, _ = run_autograder(autograder_zip, tmp_path / "autograder", {"attention.txt": "print(1)"})
    assert results["score"] == 0 and results["tests"] == []
    assert "No .py or .ipynb file" in results["output"] and "attention.txt" in results["output"]


@pytest.mark.parametrize("case", ["starter_beside_notebook", "checker_beside_work"])
def test_a_file_as_handed_out_is_never_graded_over_the_work(case, autograder_zip, tmp_path, clean):
    """Blind review (round 3): the untouched attention.py uploaded beside a solved notebook was graded (0 of
    100, exit 0, nothing said), where `make grade` graded the notebook; so was the release's check.py beside
    my_attention.py. The picker now chooses as `make grade` does (grader.cohort.submissions.graded_first)."""
    from grader.build.exercises import code_sections, notebook

    release = ROOT / "student_template"
    files = {"starter_beside_notebook": {"attention.py": (release / "exercises" / "attention.py").read_text(),
                                         "attention.ipynb": notebook(code_sections(clean))},
             "checker_beside_work": {"my_attention.py": clean, "check.py": (release / "check.py").read_text()}}[case]
    results, _ = run_autograder(autograder_zip, tmp_path / "autograder", files)
    assert results["score"] == TOTAL_POINTS, [t["output"] for t in results["tests"] if t["score"] < t["max_score"]]
    # the student is told which file was graded and which was not, as `make grade` tells the instructor
    graded, other = {"starter_beside_notebook": ("attention.ipynb", "attention.py"),
                     "checker_beside_work": ("my\\_attention.py", "check.py")}[case]
    assert results["output"].startswith(f"**Note:** your submission: several code files; graded {graded} ("), \
        results["output"][:300]
    assert f", not {other}." in results["output"].split("\n")[0], results["output"][:300]


def test_an_autograder_that_cannot_start_says_so_and_fails(autograder_zip, tmp_path):
    """Blind review (round 3): with its Python missing, run_autograder exited 0 and left no results.json."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "submission" / "attention.py").write_text("x = 1\n")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": str(tmp_path / "no-python")}
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and "failed before grading" in results["output"]
