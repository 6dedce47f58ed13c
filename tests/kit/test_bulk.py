"""Class runs through the real CLI: kill -9 and rerun, changed files, shards and merge, progress lines."""

import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from grader.faults.samples import synthetic_class

from grader.cohort import tables
from grader.judging import results_json as results
from grader.judging.judge import Options, grade_submission
from grader.chapter import STEP_KEYS
from grader.paths import ROOT, SAMPLE_CLASS
from grader.chapter import TOTAL_POINTS
from tests.kit.launch import launched
from tests.kit.test_stopping import AS_TYPED

COUNT = 16


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def classroom(tmp_path_factory, clean):
    folder = tmp_path_factory.mktemp("class")
    for name, text in synthetic_class(clean, COUNT).items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def uninterrupted(classroom, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    done = cli("grade", classroom, "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def results_in(out):
    return sorted((out / "results").glob("*.json"))


def test_progress_is_plain_lines_off_a_terminal(uninterrupted):
    grades = list(csv.DictReader((uninterrupted / "grades.csv").open()))
    assert len(grades) == COUNT and list(grades[0]) == ["submission", *STEP_KEYS, "total"]
    assert {float(row["total"]) for row in grades} - {float(TOTAL_POINTS)}, "the class mixes bugs with correct files"


def test_kill_9_midway_then_rerun_gives_the_same_grades(classroom, uninterrupted, tmp_path):
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(classroom), "--out", str(out)],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 300
    while len(results_in(out)) < 4 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    kept = {path.name: path.stat().st_mtime_ns for path in results_in(out)}
    assert 4 <= len(kept) < COUNT, "the run was not killed midway: nothing to resume"
    assert not (out / "grades.csv").exists()

    done = cli("grade", classroom, "--out", out)
    assert done.returncode == 0, done.stderr
    assert f"resuming: {len(kept)} of {COUNT} already graded and unchanged" in done.stderr
    assert (out / "grades.csv").read_text() == (uninterrupted / "grades.csv").read_text()
    for path in results_in(out):  # what was graded before the kill was reused, not regraded
        if path.name in kept:
            assert path.stat().st_mtime_ns == kept[path.name], f"{path.name} was graded twice"
    assert len(results_in(out)) == COUNT
    assert not list((out / "results").glob(".*")), "a half-written temporary file was left behind"


def test_a_changed_submission_is_regraded(classroom, uninterrupted, tmp_path):
    out = tmp_path / "out"
    folder = tmp_path / "class"
    folder.mkdir()
    for path in classroom.iterdir():
        (folder / path.name).write_text(path.read_text())
    assert cli("grade", folder, "--out", out).returncode == 0
    changed = folder / "student_000.py"  # a correct file; make it a stub-less syntax error
    changed.write_text(changed.read_text().replace("def project(", "def project(:", 1))
    done = cli("grade", folder, "--out", out)
    assert f"resuming: {COUNT - 1} of {COUNT}" in done.stderr
    rows = {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open())}
    assert float(rows["student_000"]["total"]) < TOTAL_POINTS


def test_submissions_that_left_the_class_leave_its_report_integrity_page_and_figures(classroom, uninterrupted,
                                                                                     tmp_path):
    """Before: a submission removed from the class (or renamed, as a new LMS display name does), graded again into
    the same OUT, stayed in integrity.html/csv, the cohort line, report.html and feedback/, exit 0, no note.
    Now: its results and feedback page are moved to results/former/ and feedback/former/, with a note naming
    it, and every class file counts exactly the class graded now."""
    out, folder = tmp_path / "out", tmp_path / "class"
    shutil.copytree(uninterrupted, out)
    shutil.copytree(classroom, folder)
    (folder / "student_000.py").unlink()  # left the class
    (folder / "student_001.py").rename(folder / "renamed_001.py")  # the same work under a new name
    done = cli("grade", folder, "--out", out)
    assert done.returncode == 0, done.stderr
    assert f"integrity: {COUNT - 1} submissions" in done.stdout and f"cohort: {COUNT - 1} submissions" in done.stdout
    assert "2 submission(s) no longer in this class: student_000, student_001;" in done.stderr
    for gone in ("student_000", "student_001"):
        assert not (out / "results" / f"{gone}.json").exists() and not (out / "feedback" / f"{gone}.html").exists()
        assert (out / "results" / "former" / f"{gone}.json").is_file()
        assert (out / "feedback" / "former" / f"{gone}.html").is_file()
        assert gone not in (out / "report.html").read_text() and gone not in (out / "integrity.html").read_text()
    assert "renamed_001" in (out / "report.html").read_text()
    assert len(list(csv.DictReader((out / "grades.csv").open()))) == COUNT - 1
    report = cli("report", "--out", out)  # rebuilt from OUT/results alone: the same class
    assert report.returncode == 0 and f"cohort: {COUNT - 1} submissions" in report.stdout


def test_a_folder_that_would_empty_a_graded_class_is_refused(classroom, uninterrupted, tmp_path, grader_cli):
    """Blind gradebook review (round 7): a folder of one late file graded into the class's OUT (or a forgotten
    SUBMISSION: the bundled samples) moved every other student to results/former and emptied their LMS cells,
    exit 0. Refused now, before anything is graded, saying what to do instead."""
    out, late = tmp_path / "out", tmp_path / "late"
    shutil.copytree(uninterrupted, out)
    late.mkdir()
    shutil.copy(classroom / "student_003.py", late)
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file() and path.name != ".grading.lock"}
    for folder, said in ((late, f"holds 1 of them, so {COUNT - 1} (student_000, "), (SAMPLE_CLASS, "no SUBMISSION")):
        done = grader_cli("grade", folder, "--out", out)
        assert done.returncode == 2 and said in done.stderr and "another OUT" in done.stderr, done.stderr
    assert {path: path.read_bytes() for path in before} == before


def test_shards_partition_the_class_and_merge_to_the_whole(classroom, uninterrupted, tmp_path):
    folders = []
    for index in (1, 2, 3):
        out = tmp_path / f"shard-{index}"
        done = cli("grade", classroom, "--out", out, "--shard", f"{index}/3")
        assert done.returncode == 0, done.stderr
        folders.append(out)
    names = [{path.stem for path in results_in(out)} for out in folders]
    assert sum(map(len, names)) == COUNT and len(set().union(*names)) == COUNT
    assert max(map(len, names)) - min(map(len, names)) <= 1
    again = cli("grade", classroom, "--out", tmp_path / "again", "--shard", "2/3")
    assert {path.stem for path in results_in(tmp_path / "again")} == names[1]  # deterministic slices
    assert again.returncode == 0

    merged = tmp_path / "merged"
    done = cli("merge", *folders, "--out", merged)
    assert done.returncode == 0, done.stderr
    assert (merged / "grades.csv").read_text() == (uninterrupted / "grades.csv").read_text()

    incomplete = cli("merge", folders[0], folders[2], "--out", tmp_path / "incomplete")
    assert incomplete.returncode == 1 and "missing slice(s) 2/3" in incomplete.stderr
    assert not (tmp_path / "incomplete" / "grades.csv").exists()


def test_bad_shard_is_a_usage_error(classroom, tmp_path):
    done = cli("grade", classroom, "--out", tmp_path, "--shard", "4/3")
    assert done.returncode == 2 and "SHARD must look like i/N" in done.stderr


def judged(classroom, out, suite, maxima, grade, judges, jobs):
    from grader.cohort.bulk import grade_class

    submissions = [(path.stem, path) for path in sorted(classroom.glob("*.py"))[:8]]
    lines = io.StringIO()
    graded = grade_class(submissions, suite, Options(), out, maxima, grade, {"suite": "test"}, jobs=jobs,
                         stream=lines, judges=judges)
    return tables.grades_csv(graded), lines.getvalue()


def test_two_judge_processes_grade_like_one(classroom, suite, maxima, tmp_path):
    one, _ = judged(classroom, tmp_path / "one", suite, maxima, grade_submission, judges=1, jobs=2)
    two, progress = judged(classroom, tmp_path / "two", suite, maxima, grade_submission, judges=2, jobs=4)
    assert two == one
    assert progress.count("graded student_") == 8 and "[8/8]" in progress
    assert len(list((tmp_path / "two" / "results").glob("*.json"))) == 8


def test_a_grader_error_on_one_file_costs_a_zero_that_the_next_run_grades_again(classroom, suite, maxima, tmp_path,
                                                                                caplog):
    def breaks_on_one(path, name, tests, options):
        if name == "student_003":
            raise RuntimeError("a grader bug")
        return grade_submission(path, name, tests, options)

    expected, _ = judged(classroom, tmp_path / "one", suite, maxima, grade_submission, judges=1, jobs=2)
    broken, progress = judged(classroom, tmp_path / "two", suite, maxima, breaks_on_one, judges=1, jobs=2)
    assert progress.count("graded student_") == 8
    assert "grading student_003 failed inside the grader: RuntimeError" in caplog.text  # on stderr from the CLI
    rows = {line.split(",")[0]: line for line in broken.splitlines()}
    assert rows["student_003"].endswith(",0")
    again, _ = judged(classroom, tmp_path / "two", suite, maxima, grade_submission, judges=1, jobs=2)
    assert again == expected


def test_what_a_dead_judge_leaves_is_graded_by_the_parent(classroom, suite, maxima, tmp_path):
    parent = os.getpid()

    def dies_in_a_judge(path, name, tests, options):
        if os.getpid() != parent:  # the forked judge dies on the first file it takes
            os._exit(3)  # the judge process itself dies (a grader bug, the OOM killer...)
        return grade_submission(path, name, tests, options)

    expected, _ = judged(classroom, tmp_path / "one", suite, maxima, grade_submission, judges=1, jobs=2)
    survived, progress = judged(classroom, tmp_path / "two", suite, maxima, dies_in_a_judge, judges=2, jobs=2)
    assert survived == expected
    assert progress.count("graded student_") == 8


def test_judges_take_each_file_once_whoever_is_free(tmp_path):
    """The class's files wait in one queue that every judge process and thread takes from: each file is
    taken exactly once, however the takers interleave (a judge that starts late takes fewer)."""
    from grader.cohort.judges import ItemQueue

    items = [(f"student_{i:05d}", i) for i in range(20000)]  # beyond a pipe's default 64 KiB of indexes
    waiting = ItemQueue(items)
    children = []
    for child in range(3):
        pid = os.fork()
        if pid == 0:
            taken = []
            while (item := waiting.take()) is not None:
                taken.append(item[1])
            (tmp_path / f"taker{child}").write_text(" ".join(map(str, taken)))
            os._exit(0)
        children.append(pid)
    mine = []
    while (item := waiting.take()) is not None:
        mine.append(item[1])
    for pid in children:
        os.waitpid(pid, 0)
    waiting.close()
    theirs = [int(number) for child in range(3) for number in (tmp_path / f"taker{child}").read_text().split()]
    assert sorted(mine + theirs) == list(range(20000))


def regrade_stopped(out, name, submission, number, when, *more):
    """`regrade name --submission FILE` in its own process group, signalled (the group) as soon as `when()`;
    (exit code, stderr)."""
    return stopped_command(["regrade", name, "--out", out, "--submission", submission, *more], number, when)


def stopped_command(arguments, number, when):
    """`python -m grader ARGUMENTS` in its own process group, signalled (the group) as soon as `when()`;
    (exit code, stderr)."""
    process = subprocess.Popen(launched([sys.executable, "-m", "grader", *arguments], default_signals=AS_TYPED),
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    deadline = time.monotonic() + 300
    while process.poll() is None and not when() and time.monotonic() < deadline:
        time.sleep(0.005)
    if process.poll() is None:
        os.killpg(process.pid, number)
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr


def changed(path, before):
    """Whether the file at `path` is gone or holds other bytes than `before`."""
    try:
        return path.read_bytes() != before
    except FileNotFoundError:
        return True


JOURNAL = "class.pending.json"


def stopped_in_window(run, landed, attempts=5):
    """`run(attempt)` -> (out, exit code, stderr) of a command stopped as soon as its journal appeared, run again
    until `landed(out, code, stderr)`: the journal lives a few milliseconds, and on a loaded machine (tests side
    by side) the poll can see it only once the command is done, or not at all, or the signal can leave after the
    journal is gone. The stop then came too late to test anything; what is checked is the stop that came in time."""
    for attempt in range(attempts):
        out, code, stderr = run(attempt)
        if landed(out, code, stderr):
            return out, code, stderr
    pytest.fail(f"{attempts} stops in a row came after the command's journal was gone: {stderr}")


def interrupted_in_time(recorded_anew):
    """`landed` for a Ctrl-C: not after the command ended (exit 0), nor after it had recorded everything and removed
    its journal, when it says, rightly, that nothing under way was recorded (`recorded_anew(out)`: the records
    all hold the new verdict). A Ctrl-C that leaves the old records and says so, the journal seen, is a stop in
    time: the test's own assertions then fail it."""
    def landed(out, code, stderr):
        return code != 0 and not ("nothing under way was recorded" in stderr and recorded_anew(out))
    return landed


def killed_in_time(out, code, stderr):
    return code == -signal.SIGKILL and (out / JOURNAL).exists()


def recorded_score(out, name):
    """The one score every record of OUT gives `name`: its results file, class.json, grades.csv and report.html."""
    import json

    scores = {"results": results.read_results_json(out / "results" / f"{name}.json").score,
              "class.json": json.loads((out / "class.json").read_text())["final"][name]["total"],
              "grades.csv": next(float(row["total"]) for row in csv.DictReader((out / "grades.csv").open())
                                 if row["submission"] == name)}
    assert len(set(scores.values())) == 1, scores
    assert ": overridden" not in (out / "report.html").read_text(), "no override exists in this class"
    return scores["results"]


def test_a_regrade_stopped_at_any_moment_leaves_a_class_whose_records_agree(classroom, uninterrupted, tmp_path):
    """Before: a regrade deleted the old results file before grading, and wrote the new one before grades.csv,
    class.json and the report: a Ctrl-C then said "nothing under way was recorded" while results/<x>.json held
    the new verdict (or none), and a later `grader report` (exit 0) dropped the student or marked a step
    "overridden". Now: the verdict is graded aside and journalled; a stop while grading keeps the old records
    byte for byte, a stop once the verdict is ready finishes recording it, and a kill -9 in between leaves a
    journal the next command (here `grader report`) finishes: every record agrees."""
    rows = {row["submission"]: float(row["total"]) for row in csv.DictReader((uninterrupted / "grades.csv").open())}
    name = next(known for known, total in rows.items() if total == TOTAL_POINTS)
    buggy = next(known for known, total in rows.items() if total < TOTAL_POINTS)
    fixed = tmp_path / "sent_later.py"
    fixed.write_text((classroom / f"{buggy}.py").read_text())
    hangs = tmp_path / "hangs.py"
    hangs.write_text((classroom / f"{name}.py").read_text() + "\n\ndef causal_mask(context_length):\n    while True:\n"
                     "        pass\n")

    def fresh(label):
        out = tmp_path / label
        shutil.copytree(uninterrupted, out)
        return out, out / "results" / f"{name}.json", (out / "results" / f"{name}.json").read_bytes()

    # 1. Ctrl-C while the new file is graded (a step that hangs): nothing of it is recorded.
    out, path, before = fresh("while_grading")
    files = {item: item.read_bytes() for item in out.rglob("*") if item.is_file() and item.name != ".grading.lock"}
    began = time.monotonic()  # stopped once grading is under way (before: the old results file was gone then)
    code, stderr = regrade_stopped(out, name, hangs, signal.SIGINT,
                                   lambda: changed(path, before) or time.monotonic() > began + 15, "--time-limit", "60")
    assert code == 130 and "nothing under way was recorded" in stderr and "Traceback" not in stderr, stderr
    assert path.read_bytes() == before
    assert {item: item.read_bytes() for item in files} == files and recorded_score(out, name) == TOTAL_POINTS

    def regrade_journalled(label, number):
        def run(attempt):
            out, path, before = fresh(f"{label}{attempt}")
            code, stderr = regrade_stopped(out, name, fixed, number,
                                           lambda: (out / JOURNAL).exists() or changed(path, before))
            if code == 0:  # it ended before the stop: all of it is recorded
                assert recorded_score(out, name) == rows[buggy]
            return out, code, stderr
        return run

    # 2. Ctrl-C once the new verdict is ready and journalled (before: once the results file changed): all of it is
    # recorded.
    out, code, stderr = stopped_in_window(regrade_journalled("verdict_ready", signal.SIGINT),
                                          interrupted_in_time(lambda out: recorded_score(out, name) == rows[buggy]))
    assert code == 130 and "Traceback" not in stderr, stderr
    assert "nothing under way was recorded" not in stderr and "nothing is lost" in stderr, stderr
    assert recorded_score(out, name) == rows[buggy]

    # 3. kill -9 once the verdict is journalled (before: once the results file changed): the next command finishes.
    out, code, stderr = stopped_in_window(regrade_journalled("killed", signal.SIGKILL), killed_in_time)
    report = cli("report", "--out", out)
    assert report.returncode == 0, report.stderr
    assert "finished recording the run stopped earlier" in report.stderr, report.stderr
    assert recorded_score(out, name) == rows[buggy] and not (out / JOURNAL).exists()


def test_a_grade_stopped_while_writing_its_class_files_leaves_records_that_agree(classroom, uninterrupted, tmp_path):
    """Before: `grade` wrote grades.csv, the LMS files, class.json and the report one after the other with nothing
    to say it had begun: a kill -9 after grades.csv left grades.csv of this run beside class.json (and the report)
    of the last, and a later `grader report` exited 0 over the two. Now the class files are journalled
    (class.pending.json) first: a Ctrl-C then finishes them (exit 130, "nothing is lost") and after a kill -9 the
    next command on OUT (here `grader report`) finishes them; every record gives the new, overridden total."""
    rows = {row["submission"]: float(row["total"]) for row in csv.DictReader((uninterrupted / "grades.csv").open())}
    name = next(known for known, total in rows.items() if total == TOTAL_POINTS)
    overrides = tmp_path / "overrides.csv"
    overrides.write_text(f"student,step,points,reason\n{name},{STEP_KEYS[0]},0,copied from the book\n")
    from grader.chapter import STEPS

    expected = TOTAL_POINTS - STEPS[0].points

    def stopped(label, number, landed):
        def run(attempt):
            out = tmp_path / f"{label}{attempt}"
            shutil.copytree(uninterrupted, out)
            grades = (out / "grades.csv").read_bytes()
            code, stderr = stopped_command(["grade", classroom, "--out", out, "--overrides", overrides], number,
                                           lambda: (out / JOURNAL).exists() or changed(out / "grades.csv", grades))
            return out, code, stderr
        return stopped_in_window(run, landed)

    def totals(out):
        import json

        return {"class.json": json.loads((out / "class.json").read_text())["final"][name]["total"],
                "grades.csv": next(float(row["total"]) for row in csv.DictReader((out / "grades.csv").open())
                                   if row["submission"] == name)}

    def recorded(out):
        assert set(totals(out).values()) == {expected}, totals(out)
        assert ": overridden" in (out / "report.html").read_text()
        assert not (out / JOURNAL).exists()

    out, code, stderr = stopped("interrupted", signal.SIGINT, interrupted_in_time(
        lambda out: set(totals(out).values()) == {expected} and not (out / JOURNAL).exists()))
    assert code == 130 and "Traceback" not in stderr and "nothing is lost" in stderr, stderr
    recorded(out)

    out, code, stderr = stopped("killed", signal.SIGKILL, killed_in_time)
    assert code == -signal.SIGKILL, stderr
    report = cli("report", "--out", out)
    assert report.returncode == 0, report.stderr
    assert "finished recording the run stopped earlier" in report.stderr, report.stderr
    recorded(out)


def test_a_regrade_grades_as_the_class_was_graded_unless_told_otherwise(classroom, uninterrupted, tmp_path):
    """Before (a blind tester): `make regrade` passed `--engine kit` and the default limits whatever the class was
    graded with (ENGINE=otter TIME_LIMIT=3): one student was regraded under other rules, in silence. Now a class
    records what it was graded with (class.json's graded_with) and a regrade uses it unless an option is given,
    which is then said."""
    import json

    out = tmp_path / "out"
    done = cli("grade", classroom, "--out", out, "--time-limit", "7", "--public-only")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "class.json").read_text())
    assert record["graded_with"]["time_limit"] == 7 and record["graded_with"]["public_only"] is True
    name = sorted(record["final"])[0]
    tests_before = len(results.read_results_json(out / "results" / f"{name}.json").tests)
    again = cli("regrade", name, "--out", out)
    assert again.returncode == 0 and "the class was graded with" not in again.stderr, again.stderr
    assert len(results.read_results_json(out / "results" / f"{name}.json").tests) == tests_before  # public only
    told = cli("regrade", name, "--out", out, "--time-limit", "9")
    assert told.returncode == 0, told.stderr
    assert "time-limit 9.0; the class was graded with 7" in told.stderr, told.stderr
