"""The stock Otter autograder (dist/otter) and `make grade ENGINE=otter`, with the real `otter run`.

`otter run` costs 12-16 s per submission (more on a busy machine), so this file
runs it nine times, two at a time: the solution as .py and as the released
notebook, the stub, five catalogue bugs in five steps (compared with the kit's
own grader test by test), and one submission that hangs.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from grader.faults.bugs import BUGS
from otter.test_files import create_test_file
from otter.nbmeta_config import NBMetadataConfig

from grader.build.exercises import code_sections, notebook
from grader.judging.judge import Options, grade_submission
from grader.integrations import otter_engine
from grader.integrations.otter_engine import case_verdicts, grade_with_otter
from grader.integrations.otter import NAME
from grader.build.release import with_checks
from grader.chapter import STEP_KEYS
from grader.paths import ROOT

pytestmark = [pytest.mark.kit,
              pytest.mark.slow(reason="`otter run` for real on the solution, the stub and the catalogue's bugs")]

COMPARED_BUGS = ("masking_fill_zero", "dropout_no_rescale", "causal_mask_not_sliced", "wrapper_same_head_repeated",
                 "mha_merge_without_transpose")


@pytest.fixture(scope="module")
def autograder(otter_dist):
    return otter_dist / "otter" / f"{NAME}-autograder.zip"


def otter_grade(autograder, path, suite, **options):
    return grade_with_otter(path, path.stem, suite, Options.of(**options), autograder=autograder)


def failures(result):
    return [(test.name, test.output) for test in result.tests if test.score < test.max_score]


# -- the zip ----------------------------------------------------------------

def test_zip_is_an_otter_autograder_for_python_3_11_and_cpu_torch(autograder):
    with zipfile.ZipFile(autograder) as archive:
        names = set(archive.namelist())
        environment = yaml.safe_load(archive.read("environment.yml"))
        config = json.loads(archive.read("otter_config.json"))
    assert {"run_autograder", "setup.sh", "run_otter.py", "otter_config.json"} <= names
    assert {f"tests/{key}.py" for key in STEP_KEYS} == {n for n in names if n.count("/") == 1 and n.startswith("tests/")}
    assert "files/grader/integrations/incell.py" in names
    assert "tests/public/test_masking.py" in names and "tests/hidden/test_masking_hidden.py" in names
    assert "tests/hidden/oracle.py" in names and "files/grader/check/book.py" in names
    assert config["lang"] == "python"
    assert "python=3.11" in environment["dependencies"]
    pip = next(item["pip"] for item in environment["dependencies"] if isinstance(item, dict))
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip
    assert "torch==2.13.0+cpu" in pip and "numpy==2.2.6" in pip
    assert not [line for line in pip if "nvidia" in line or "cuda" in line]


def test_one_question_per_step_with_the_kits_cases_and_points(autograder, suite, maxima, tmp_path):
    with zipfile.ZipFile(autograder) as archive:
        archive.extractall(tmp_path)
    for key in STEP_KEYS:
        test_file = create_test_file(str(tmp_path / "tests" / f"{key}.py"), NBMetadataConfig())
        kit = [test for test in suite if test.step == key]
        assert test_file.name == key
        assert [(case.name, case.points, case.hidden) for case in test_file.test_cases] == [
            (test.name, test.points, test.kind == "hidden") for test in kit]
        assert test_file.possible == maxima[key]
        source = (tmp_path / "tests" / f"{key}.py").read_text()
        assert "OK_FORMAT = False" in source and "@test_case(" in source


def test_case_verdicts_read_otters_summary():
    summary = ("masking results:\n    masking: a result:\n        ✅ Test case passed\n\n"
               "    masking: b result:\n        ❌ Test case failed\n        Error at line 3 in test masking:\n"
               "              check(env, KIT, 'masking: b')\n        CheckFailed: masking: b\n"
               "        row 2 sums to 0.5\n            more result:\n")
    assert case_verdicts(summary, ["masking: a", "masking: b"]) == {
        "masking: a": (True, ""), "masking: b": (False, "row 2 sums to 0.5\n    more result:")}
    assert case_verdicts("masking results: All test cases passed!", ["masking: a"]) == {"masking: a": (True, "")}


# -- otter run --------------------------------------------------------------

@pytest.fixture(scope="module")
def submissions(tmp_path_factory, clean, stub):
    """{name: path}: the solution as .py and as the released notebook (under a kernelspec this machine
    does not have), the stub, and the compared catalogue bugs."""
    folder = tmp_path_factory.mktemp("otter-submissions")
    document = json.loads(with_checks(notebook(code_sections(clean))))
    document["metadata"]["kernelspec"] = {"name": "conda-env-course-py", "display_name": "Course", "language": "python"}
    texts = {"solution.py": clean, "solution.ipynb": json.dumps(document), "stub.py": stub}
    texts.update({f"{bug.id}.py": bug.apply(clean) for bug in BUGS if bug.id in COMPARED_BUGS})
    for name, text in texts.items():
        (folder / name).write_text(text)
    return {name: folder / name for name in texts}


@pytest.fixture(scope="module")
def by_otter(autograder, submissions, suite):
    """{name: SubmissionResult} from `otter run`, two submissions at a time."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        graded = pool.map(lambda path: otter_grade(autograder, path, suite), submissions.values())
        return dict(zip(submissions, graded))


def test_solution_py_and_released_notebook_get_full_marks(by_otter, maxima):
    for name in ("solution.py", "solution.ipynb"):
        result = by_otter[name]
        assert not failures(result), (name, failures(result)[:3])
        assert result.step_scores() == maxima and not result.problems, name


def test_stub_gets_zero_with_the_steps_message(by_otter):
    result = by_otter["stub.py"]
    assert result.score == 0
    for test in result.tests:
        assert "not implemented yet" in test.output and f"{test.step}: " in test.output, (test.name, test.output)


def test_bugs_get_the_same_scores_as_the_kits_grader(by_otter, submissions, suite, maxima):
    bugs = [bug for bug in BUGS if bug.id in COMPARED_BUGS]
    assert len({bug.step for bug in bugs}) == len(COMPARED_BUGS) >= 5
    for bug in bugs:
        otter = by_otter[f"{bug.id}.py"]
        kit = grade_submission(submissions[f"{bug.id}.py"], bug.id, suite, Options())
        differ = [(o.name, o.score, o.output, k.score, k.output) for o, k in zip(otter.tests, kit.tests)
                  if (o.name, o.score) != (k.name, k.score)]
        assert not differ and len(otter.tests) == len(kit.tests), (bug.id, "otter vs kit:", differ[:2])
        assert otter.step_scores() == kit.step_scores(), bug.id
        assert otter.step_scores()[bug.step] < maxima[bug.step], f"{bug.id} was not caught"


def test_a_hanging_submission_is_stopped_with_everything_it_started(autograder, suite, clean, tmp_path,
                                                                     monkeypatch):
    pid_file = tmp_path / "sleeper.pid"
    hang = clean + (
        "\nimport subprocess, time\n"
        f"_sleeper = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(_sleeper.pid))\n"
        "time.sleep(600)\n")
    path = tmp_path / "hang.py"
    path.write_text(hang)
    private = tmp_path / "tmp"  # where the engine makes its temporary folder (others may grade with Otter too)
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    started = time.monotonic()
    result = otter_grade(autograder, path, suite, submission_seconds=35)
    assert time.monotonic() - started < 60
    assert result.score == 0 and "did not finish within 35 s" in result.problems[0]
    sleeper = int(pid_file.read_text())
    time.sleep(0.2)
    assert not os.path.exists(f"/proc/{sleeper}") or "Z" in open(f"/proc/{sleeper}/stat").read().split()[2]
    assert not list(private.iterdir())


def test_a_grader_killed_midway_takes_otter_down_and_the_next_run_removes_its_folders(clean, tmp_path, monkeypatch):
    """Before (a blind tester): `kill -9` of a class run graded with ENGINE=otter left `otter run` and its kernel
    grading on for up to 70 s, and its kit-otter-* folders in /tmp for good. Now `otter run` dies with the
    grader (its kernel follows), and the next Otter run removes the folders of graders no longer running."""
    classroom, scratch = tmp_path / "class", tmp_path / "scratch"
    classroom.mkdir()
    scratch.mkdir()
    kernel_pid = tmp_path / "kernel.pid"
    (classroom / "sleeper.py").write_text(
        clean + f"\nimport os, time\nopen({str(kernel_pid)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n")
    command = [sys.executable, "-m", "grader", "grade", classroom, "--out", tmp_path / "out", "--engine", "otter"]
    grading = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "TMPDIR": str(scratch)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while not (kernel_pid.exists() and kernel_pid.read_text()) and time.monotonic() < deadline:
        assert grading.poll() is None, "the grader ended before the submission ran"
        time.sleep(0.2)
    grading.kill()
    grading.wait()
    kernel = int(kernel_pid.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (running_from(scratch) or alive(kernel)):
        time.sleep(0.2)
    assert not running_from(scratch) and not alive(kernel), "otter run or its kernel outlived the killed grader"
    left = sorted(folder.name for folder in scratch.iterdir())
    assert any(name.startswith("kit-otter-run-") for name in left), left  # what the kill left behind
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    mine = scratch / f"kit-otter-run-{os.getpid()}-live"  # a running grader's folder is kept
    mine.mkdir()
    otter_engine.sweep_left_behind()
    assert [folder.name for folder in scratch.iterdir()] == [mine.name]


def running_from(scratch):
    """Pids of the processes whose TMPDIR is in `scratch` (the engine's `otter run` and its kernel have a folder
    of their own there)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            environ = open(f"/proc/{entry}/environ", "rb").read() if entry.isdigit() else b""
        except OSError:
            continue
        if any(entry.startswith(f"TMPDIR={scratch}/".encode()) for entry in environ.split(b"\0")):
            found.append(int(entry))
    return found


def alive(pid):
    try:
        return "Z" not in open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
