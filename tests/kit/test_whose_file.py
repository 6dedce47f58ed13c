"""Whose file is it: every submission goes to its own student, whatever folders wrap a download.

LMS downloads are read by their structure (Canvas flat files, Moodle folders, a Gradescope export's
metadata, one folder per student) at whatever depth they sit: a teacher's `Week 3/` folder, a zip of
one top folder, or both. Two students are never graded as one: code in several folders of what looks
like one student is graded apart and said. A zip holding two different files under one path is refused
(which one the student meant cannot be told); the same file twice is graded once and said. The cohort
report names a file that could not be graded at all as its feedback page does.

Most checks call `collect` in-process; one end-to-end run shows the grade that used to be lost.
"""

import csv
import html
import os
import subprocess
import sys
import zipfile

import pytest

from grader.chapter import TOTAL_POINTS
from grader.cohort import lms_names
from grader.check.loader import SubmissionError, read_chunks
from grader.cohort.submissions import collect
from grader.errors import UsageError
from grader.feedback import class_view, report
from grader.judging import results_json
from grader.judging.model import zero_result
from grader.paths import ROOT

STUDENTS = ("alice", "bob", "carol")


def write_tree(root, files):
    """Write {relative path: text} under `root`; returns root."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def zip_tree(archive, files):
    archive.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w") as zipped:
        for relative, text in files.items():
            zipped.writestr(relative, text)
    return archive


def graded(collected):
    """{submission name: the text of the file graded for it}: who got which file."""
    return {name: path.read_text(encoding="utf-8") for name, path in collected.submissions}


def collect_as(kind, tmp_path, files):
    """collect() over `files` given as a folder or as a zip of them."""
    if kind == "folder":
        return collect(write_tree(tmp_path / "given", files))
    return collect(zip_tree(tmp_path / "download.zip", files))


def teachers_folders(prefix):
    return {f"{prefix}{student}/attention.py": f"# {student}\n" for student in STUDENTS}


# ------------------------------------------------------------------------------------- more folder levels

@pytest.mark.parametrize("kind", ["folder", "zip"])
@pytest.mark.parametrize("prefix", ["Submissions/Week 3/", "Course/Submissions/Week 3/"],
                         ids=["two levels", "three levels"])
def test_a_teachers_week_folder_keeps_one_submission_per_student(tmp_path, kind, prefix):
    collected = collect_as(kind, tmp_path, teachers_folders(prefix))
    try:
        assert graded(collected) == {student: f"# {student}\n" for student in STUDENTS}, collected.problems
    finally:
        collected.cleanup()


def canvas_download(prefix):
    return {f"{prefix}doejane_5000_811_attention.py": "# jane\n",
            f"{prefix}nunezzoe_late_5001_812_attention.py": "# zoe\n",
            f"{prefix}smithbob_5002_813_attention-1.py": "# bob\n"}


def moodle_download(prefix):
    return {f"{prefix}Jane Doe_700001_assignsubmission_file/attention.py": "# jane\n",
            f"{prefix}Zoë Núñez_700002_assignsubmission_file_/work/attention.ipynb": "# zoe\n",
            f"{prefix}Bob Smith_700003_assignsubmission_onlinetext/onlinetext.html": "<p>see file</p>",
            f"{prefix}Bob Smith_700003_assignsubmission_file/attention.py": "# bob\n"}


def gradescope_export(prefix):
    metadata = "".join(f"submission_{number}:\n  :submitters:\n  - :name: {name}\n    :sid: '{sid}'\n"
                       f"    :email: {sid.lower()}@example.edu\n"
                       for number, name, sid in ((501, "Jane Doe", "S01"), (502, "Zoe Nunez", "S02"),
                                                 (503, "Bob Smith", "S03")))
    return {f"{prefix}{lms_names.GRADESCOPE_METADATA}": metadata,
            f"{prefix}submission_501/attention.py": "# jane\n",
            f"{prefix}submission_502/work/attention.ipynb": "# zoe\n",
            f"{prefix}submission_503/attention.py": "# bob\n"}


LAYOUTS = {
    "canvas": (canvas_download, {"doejane_5000": ("# jane\n", "5000"), "nunezzoe_5001": ("# zoe\n", "5001"),
                                 "smithbob_5002": ("# bob\n", "5002")}),
    "moodle": (moodle_download, {"Jane_Doe_700001": ("# jane\n", "700001"),
                                 "Zoë_Núñez_700002": ("# zoe\n", "700002"),
                                 "Bob_Smith_700003": ("# bob\n", "700003")}),
    "gradescope": (gradescope_export, {"S01": ("# jane\n", "S01"), "S02": ("# zoe\n", "S02"),
                                       "S03": ("# bob\n", "S03")}),
}


@pytest.mark.parametrize("kind", ["folder", "zip"])
@pytest.mark.parametrize("prefix", ["", "Week 3/", "Course/Week 3/"], ids=["as downloaded", "one level", "two levels"])
@pytest.mark.parametrize("lms", sorted(LAYOUTS))
def test_lms_downloads_are_read_by_their_structure_at_any_depth(tmp_path, kind, prefix, lms):
    layout, expected = LAYOUTS[lms]
    collected = collect_as(kind, tmp_path, layout(prefix))
    try:
        assert graded(collected) == {name: text for name, (text, _) in expected.items()}, collected.problems
        assert {name: origin.key for name, origin in collected.origins.items()} == \
            {name: key for name, (_, key) in expected.items()}
        assert all(origin.lms == lms for origin in collected.origins.values())
        assert not any(lms_names.GRADESCOPE_METADATA in problem for problem in collected.problems)
    finally:
        collected.cleanup()


def test_a_zip_written_with_backslashes_keeps_its_folders(tmp_path):
    """Windows PowerShell 5's Compress-Archive writes `Week 3\\alice\\attention.py`."""
    files = {relative.replace("/", "\\"): text for relative, text in teachers_folders("Week 3/").items()}
    collected = collect(zip_tree(tmp_path / "class.zip", files))
    try:
        assert graded(collected) == {student: f"# {student}\n" for student in STUDENTS}, collected.problems
    finally:
        collected.cleanup()


def test_one_student_in_a_folder_keeps_the_folders_name(tmp_path):
    for kind in ("folder", "zip"):
        collected = collect_as(kind, tmp_path / kind, {"class/alice/attention.py": "# alice\n"})
        try:
            assert graded(collected) == {"alice": "# alice\n"}
        finally:
            collected.cleanup()


# ------------------------------------------------------------------------------ two students never one

def test_two_weeks_in_one_folder_are_never_merged(tmp_path):
    files = {**teachers_folders("Submissions/Week 3/"),
             **{f"Submissions/Week 4/{s}/attention.py": f"# {s} week 4\n" for s in STUDENTS}}
    collected = collect_as("folder", tmp_path, files)
    texts = graded(collected)
    assert sorted(texts.values()) == sorted(files.values()), collected.problems  # every file graded, once
    assert texts["Week_3-alice"] == "# alice\n" and texts["Week_4-alice"] == "# alice week 4\n"
    assert any("Week 3: code files in 3 folders" in problem and "graded apart" in problem
               for problem in collected.problems), collected.problems


def test_a_group_folder_beside_students_is_graded_apart(tmp_path):
    files = {"class/alice/attention.py": "# alice\n", "class/late ones/bob/attention.py": "# bob\n",
             "class/late ones/carol/attention.py": "# carol\n"}
    collected = collect_as("folder", tmp_path, files)
    assert graded(collected) == {"alice": "# alice\n", "late_ones-bob": "# bob\n", "late_ones-carol": "# carol\n"}


def test_a_flat_folder_of_student_files_under_one_more_level(tmp_path):
    files = {"Week 3/alice.py": "# alice\n", "Week 3/bob.ipynb": "# bob\n", "Week 3/carol.py": "# carol\n"}
    for kind in ("folder", "zip"):
        collected = collect_as(kind, tmp_path / kind, {f"Course/{k}": v for k, v in files.items()})
        try:
            assert graded(collected) == {s: f"# {s}\n" for s in STUDENTS}, collected.problems
        finally:
            collected.cleanup()


def test_files_of_several_names_in_one_folder_beside_students_are_graded_apart(tmp_path):
    files = {"class/carol/attention.py": "# carol\n", "class/Week 3/alice.py": "# alice\n",
             "class/Week 3/bob.ipynb": "# bob\n", "class/dave/lab3.py": "# dave\n",
             "class/dave/lab3.ipynb": "# dave notebook\n"}
    collected = collect_as("folder", tmp_path, files)
    assert graded(collected) == {"carol": "# carol\n", "Week_3-alice": "# alice\n", "Week_3-bob": "# bob\n",
                                 "dave": "# dave\n"}  # lab3.py and lab3.ipynb: one piece of work, the .py graded
    assert any(p.startswith("Week 3: 2 code files of different names") and "graded apart" in p
               for p in collected.problems), collected.problems
    assert any(p.startswith("dave: several code files; graded lab3.py") for p in collected.problems)


def test_an_lms_folder_is_one_student_whatever_it_holds(tmp_path):
    files = {"Jane Doe_700001_assignsubmission_file/my_solution.py": "# jane\n",
             "Jane Doe_700001_assignsubmission_file/utils.py": "# jane's helpers\n",
             "Bob Smith_700003_assignsubmission_file/attention.py": "# bob\n"}
    collected = collect_as("folder", tmp_path, files)
    assert graded(collected) == {"Jane_Doe_700001": "# jane\n", "Bob_Smith_700003": "# bob\n"}
    assert collected.origins["Jane_Doe_700001"].key == "700001"
    assert any("graded my_solution.py, not utils.py" in p for p in collected.problems), collected.problems


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_two_lms_downloads_in_one_folder_are_refused(tmp_path, kind):
    files = {**canvas_download("Downloads/Week 3/"), **canvas_download("Downloads/Week 4/")}
    with pytest.raises(UsageError, match="Week 3 is an LMS download .* by itself"):
        collect_as(kind, tmp_path, files)


def test_several_exercise_files_of_one_student_say_which_was_graded(tmp_path):
    files = {"class/alice/attention.ipynb": "# alice notebook\n", "class/alice/attention.py": "# alice\n",
             "class/alice/scratch.py": "# alice scratch\n", "class/bob/attention.py": "# bob\n"}
    collected = collect_as("folder", tmp_path, files)
    assert graded(collected) == {"alice": "# alice\n", "bob": "# bob\n"}
    said = [problem for problem in collected.problems if problem.startswith("alice:")]
    assert said and "graded attention.py" in said[0] and "attention.ipynb" in said[0] and "scratch.py" in said[0]


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_the_exercises_exact_name_beats_another_case(tmp_path, kind):
    """Before: `Attention.py` sorted before `attention.py` ('A' < 'a') and was graded, the right file not.
    Now: the exact exercise name is graded, and the note says the other was not (issue 25)."""
    collected = collect_as(kind, tmp_path, {"class/gus/attention.py": "# gus, exact name\n",
                                            "class/gus/Attention.py": "# gus, other case\n",
                                            "class/bob/attention.py": "# bob\n"})
    try:
        assert graded(collected) == {"gus": "# gus, exact name\n", "bob": "# bob\n"}
        assert "gus: several code files; graded attention.py (the exercise's exact name), not Attention.py" \
            in collected.problems, collected.problems
    finally:
        collected.cleanup()


@pytest.mark.parametrize("kind", ["folder", "zip"])
@pytest.mark.parametrize("uploads", [("903_attention.py", "904_attention-1.py"),
                                     ("902_attention-1.py", "950_attention-2.py"),
                                     ("903_attention.ipynb", "960_attention-1.ipynb"),
                                     ("970_attention-7.py", "990_attention-0c6e2f0a-51b4-4f3e-9d1a-2b7c8e9f0a1b.py")],
                         ids=["renamed once", "renamed twice", "notebooks", "past -7"])
def test_a_canvas_resubmission_grades_the_latest_upload(tmp_path, kind, uploads):
    """Before: a student's files were sorted by their whole name, so the oldest upload (`_903_attention.py`)
    was graded, or `-1` before `-2`. Now: the latest, by Canvas's file id (ids only grow; Canvas renames a
    file re-uploaded under a name the student's files hold `-1`, `-2`... `-7`, then `-<uuid>`), and the
    note says which (issue 25)."""
    older, latest = uploads
    files = {f"hoppergrace_5003_{older}": "# older\n", f"hoppergrace_5003_{latest}": "# latest\n",
             "lovelaceada_5001_901_attention.py": "# ada\n"}
    collected = collect_as(kind, tmp_path, files)
    try:
        assert graded(collected) == {"hoppergrace_5003": "# latest\n", "lovelaceada_5001": "# ada\n"}
        file_id, _, original = latest.partition("_")
        assert f"hoppergrace_5003: several code files; graded {original} (the latest upload: Canvas file id " \
               f"{file_id}), not {older.partition('_')[2]}" in collected.problems, collected.problems
    finally:
        collected.cleanup()


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_a_helper_uploaded_after_the_work_is_not_graded_over_it(tmp_path, kind):
    """Blind gradebook review (round 4): Canvas `doejane_5000_811_my_attention.py` (the work) and a later
    `doejane_5000_812_utils.py` (four lines of helpers): the latest upload, utils.py, was graded (0), while a
    Gradescope export of the same two files graded the work. A file that defines none of the exercise's
    functions and classes now comes after one that does, whatever its file id."""
    work = "import torch\n\ndef causal_mask(context_length):\n    return torch.ones(2, 2).triu(1).bool()\n"
    files = {"doejane_5000_811_my_attention.py": work, "doejane_5000_812_utils.py": "def helper(x):\n    return x\n",
             "lovelaceada_5001_901_attention.py": "# ada\n"}
    collected = collect_as(kind, tmp_path, files)
    try:
        assert graded(collected)["doejane_5000"] == work
        assert "doejane_5000: several code files; graded my_attention.py (the other defines none of the exercise's " \
               "functions and classes), not utils.py" in collected.problems, collected.problems
    finally:
        collected.cleanup()


def test_a_folder_grades_the_highest_copy(tmp_path):
    """Before: `attention-1.py` sorted before `attention-2.py` and `attention-10.py` before `attention-9.py`
    (by text), so an older copy was graded. Now: the highest copy number, as a number (issue 25)."""
    collected = collect_as("folder", tmp_path, {"class/emil/attention.py": "# first\n",
                                                "class/emil/attention-9.py": "# ninth\n",
                                                "class/emil/attention-10.py": "# tenth\n",
                                                "class/fay/attention (1).py": "# fay, copy\n",
                                                "class/fay/attention (2).py": "# fay, second copy\n"})
    assert graded(collected) == {"emil": "# tenth\n", "fay": "# fay, second copy\n"}
    assert any(problem.startswith("emil: several code files; graded attention-10.py (the latest copy)")
               for problem in collected.problems), collected.problems


def test_names_that_differ_only_in_case_are_graded_apart_and_said(tmp_path):
    """`Alice/` and `alice/` would share one results file where the file system folds case (macOS)."""
    collected = collect_as("folder", tmp_path, {"class/Alice/attention.py": "# Alice\n",
                                                "class/alice/attention.py": "# alice\n"})
    assert graded(collected) == {"Alice": "# Alice\n", "alice-2": "# alice\n"}
    assert any("graded as 'alice-2'" in problem for problem in collected.problems)


def test_a_file_that_cannot_be_unpacked_is_charged_to_its_own_student(tmp_path):
    files = {f"Submissions/Week 3/{s}/attention.py": f"# {s}\n" for s in ("alice", "carol")}
    archive = zip_tree(tmp_path / "class.zip", files)
    with zipfile.ZipFile(archive, "a", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("Submissions/Week 3/bob/attention.py", b"#" * (20 << 20))  # far too large once unpacked
    collected = collect(archive)
    try:
        assert graded(collected) == {"alice": "# alice\n", "carol": "# carol\n"}
        assert [name for name, _ in collected.rejected] == ["bob"]
    finally:
        collected.cleanup()


# ---------------------------------------------------------------------------------- duplicate zip entries

def zip_with_duplicate(archive, first, second, path="alice/attention.py"):
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("bob/attention.py", "# bob\n")
        zipped.writestr(path, first)
        with pytest.warns(UserWarning, match="Duplicate name"):
            zipped.writestr(path, second)
    return archive


def test_two_different_files_under_one_zip_path_are_refused_by_name(tmp_path):
    archive = zip_with_duplicate(tmp_path / "class.zip", "# alice, first\n", "# alice, second\n")
    with pytest.raises(UsageError, match=r"class\.zip holds 2 different files named 'alice/attention\.py'"):
        collect(archive)


def test_the_same_file_twice_in_a_zip_is_graded_once_and_said(tmp_path):
    archive = zip_with_duplicate(tmp_path / "class.zip", "# alice\n", "# alice\n")
    collected = collect(archive)
    try:
        assert graded(collected) == {"alice": "# alice\n", "bob": "# bob\n"}
        assert any("'alice/attention.py' twice" in problem for problem in collected.problems), collected.problems
    finally:
        collected.cleanup()


def test_a_refused_duplicate_stops_the_run_before_grading(tmp_path, grader_cli):
    archive = zip_with_duplicate(tmp_path / "class.zip", "# alice, first\n", "# alice, second\n")
    done = grader_cli("grade", archive, "--out", tmp_path / "out", cwd=ROOT)
    assert done.returncode == 2 and "'alice/attention.py'" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "out" / "grades.csv").exists()


# ------------------------------------------------------------------------------------- end to end, once

@pytest.mark.slow(reason='grades a week folder through `python -m grader grade`')
def test_a_week_folder_grades_every_student(tmp_path, clean, stub):
    """The lost grade, end to end: `grade Submissions/` over `Week 3/<student>/attention.py`."""
    write_tree(tmp_path / "Submissions", {"Week 3/alice/attention.py": clean, "Week 3/bob/attention.py": stub})
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(tmp_path / "Submissions"), "--out", str(out),
                           "--jobs", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "grades.csv", encoding="utf-8") as stream:
        totals = {row["submission"]: float(row["total"]) for row in csv.DictReader(stream)}
    assert totals == {"alice": TOTAL_POINTS, "bob": 0.0}


# --------------------------------------------------------------------------- the report names the problem

@pytest.mark.parametrize("name, content", [("empty.py", ""), ("broken.ipynb", "{not json")],
                         ids=["empty file", "not a notebook"])
def test_the_report_names_a_file_that_could_not_be_graded(tmp_path, suite, maxima, name, content):
    (tmp_path / name).write_text(content)
    with pytest.raises(SubmissionError) as refused:
        read_chunks(tmp_path / name)
    why = str(refused.value)  # what the feedback page says: "empty.py is empty...", "... not a valid notebook ..."
    out = tmp_path / "out"
    (out / "results").mkdir(parents=True)
    results_json.write_results_json(zero_result("someone", None, suite, why), maxima,
                                    out / "results" / "someone.json")
    submissions, _ = report.load(out)
    assert class_view.what_went_wrong(submissions[0], maxima) == [f"not graded: {why}"]
    text, _, summary = report.build(out)
    assert f"not graded at all: 1 (someone: {why})" in summary
    assert "no known cause" not in text and "partly did not load" not in text and "had parts" not in text
    assert html.escape(f"not graded: {why}") in text
    assert not report.undiagnosed(submissions, maxima)


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_the_starter_file_uploaded_beside_the_work_is_not_the_one_graded(tmp_path, kind):
    """Blind gradebook review: a Canvas student uploaded the untouched `attention.py` and, later, their finished
    notebook; "a .py before a notebook" graded the starter: 0 instead of 100, exit 0. A file whose code is the
    starter's as handed out (exercises/, only compared, never run) now comes after any other; alone, it is graded
    (and earns what an unfinished file earns)."""
    starter = (ROOT / "exercises" / "attention.py").read_text(encoding="utf-8")
    work = (ROOT / "samples" / "class" / "grace_hopper.ipynb").read_text(encoding="utf-8")  # a notebook worked in
    files = {"lovelaceada_5001_9001_attention.py": starter.replace("\n", "  \n"),  # end spaces: still the starter
             "lovelaceada_5001_9002_attention.ipynb": work, "turingalan_5002_9003_attention.py": starter}
    collected = collect_as(kind, tmp_path, files)
    try:
        assert graded(collected) == {"lovelaceada_5001": work, "turingalan_5002": starter}
        assert ("lovelaceada_5001: several code files; graded attention.ipynb (the other is a file as handed out, "
                "unchanged), not attention.py") in collected.problems, collected.problems
    finally:
        collected.cleanup()


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_an_lms_upload_without_code_is_a_zero_that_says_what_was_handed_in(tmp_path, kind):
    """Blind gradebook review: a Canvas student who uploaded a zip was skipped with a note, then shown as "did not
    submit" in the report, their LMS cell empty, exit 0. Now a zero whose reason names the upload; a student whose
    other upload is code keeps that code."""
    files = {"lovelaceada_5001_9001_attention.py": "# ada\n", "liskovbarbara_5003_9004_submission.zip": "PK",
             "hoppergrace_5004_9005_attention.py": "# grace\n", "hoppergrace_5004_9006_notes.pdf": "%PDF"}
    collected = collect_as(kind, tmp_path, files)
    try:
        assert graded(collected) == {"lovelaceada_5001": "# ada\n", "hoppergrace_5004": "# grace\n"}
        assert [name for name, _ in collected.rejected] == ["liskovbarbara_5003"]
        assert collected.rejected[0][1].startswith("liskovbarbara_5003_9004_submission.zip ")  # (in a zip: "a zip
        # inside the zip", as before)
    finally:
        collected.cleanup()
    moodle = {"Jane Doe_123456_assignsubmission_file_/report.pdf": "%PDF",
              "Ann Lee_123457_assignsubmission_file_/attention.py": "# ann\n"}
    collected = collect_as(kind, tmp_path / "moodle", moodle)
    try:
        assert [why.split(" was ")[0] for _, why in collected.rejected] == ["Jane Doe_123456_assignsubmission_file_"]
        assert len(graded(collected)) == 1
    finally:
        collected.cleanup()


def test_the_release_notebook_beside_the_work_is_not_the_one_graded(tmp_path):
    """Blind review (round 3): eve's solved Attention.py beside the release's untouched attention.ipynb (the one
    with its setup cell, not exercises/'s) gave 0: "the exercise's exact name" won. Every file students are handed
    counts as handed out (paths.STARTERS)."""
    released = (ROOT / "student_template" / "exercises" / "attention.ipynb").read_text(encoding="utf-8")
    collected = collect_as("folder", tmp_path, {"class/eve/Attention.py": "# eve's work\n",
                                               "class/eve/attention.ipynb": released,
                                               "class/fay/attention.py": "# fay\n"})
    try:
        assert graded(collected)["eve"] == "# eve's work\n"
    finally:
        collected.cleanup()


def test_a_class_zip_of_one_zip_per_student_is_refused_not_graded_as_zeros(tmp_path):
    """Blind gradebook review (round 4): class.zip holding s1001.zip, s1002.zip, s1003.zip (each attention.py) gave
    every student 0 "unzip it and submit the files", exit 0: advice to a student for a layout the instructor made.
    A zip whose students are all zips in it is now refused with the one command that unpacks them."""
    inner = {}
    for student in ("s1001", "s1002", "s1003"):
        inner[student] = zip_tree(tmp_path / f"{student}.zip", {"attention.py": f"# {student}\n"}).read_bytes()
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for student, data in inner.items():
            zipped.writestr(f"{student}.zip", data)
    with pytest.raises(UsageError, match=r"holds one zip per student \(s1001, s1002, s1003\).*unzip -d"):
        collect(archive)
    with zipfile.ZipFile(archive, "a") as zipped:  # beside real work, a stray zip stays one student's zero
        zipped.writestr("alice/attention.py", "# alice\n")
    collected = collect(archive)
    try:
        assert graded(collected) == {"alice": "# alice\n"} and len(collected.rejected) == 3
    finally:
        collected.cleanup()


def test_two_files_whose_names_print_alike_are_told_apart_in_the_note(tmp_path):
    """Blind gradebook review (round 4): `josé.py` twice, once in each Unicode form, gave the note
    ".../josé.py: ... graded as 'josé-2'", and both paths print the same: which file that was could not be told."""
    import unicodedata

    folder = tmp_path / "class"
    folder.mkdir()
    (folder / f"{unicodedata.normalize('NFC', 'josé')}.py").write_text("# precomposed\n")
    (folder / f"{unicodedata.normalize('NFD', 'josé')}.py").write_text("# combining\n")
    collected = collect(folder)
    said = [problem for problem in collected.problems if "graded as 'josé-2'" in problem]
    assert len(said) == 1 and "accents; the other prints alike" in said[0], collected.problems
    renamed = dict(collected.submissions)["josé-2"]
    assert ("precomposed" in said[0]) == unicodedata.is_normalized("NFC", str(renamed))


def test_a_newcomer_whose_name_cleans_to_a_students_does_not_take_it(tmp_path):
    """Blind gradebook review (round 6): `alice_smith/` graded (with an override), then `alice smith/` added: the
    newcomer sorted first and took the name `alice_smith`, with its row, page and override, exit 0 (the run told
    the instructor that alice_smith had resubmitted). The name goes to the folder already spelt so."""
    collected = collect_as("folder", tmp_path, {"class/alice_smith/attention.py": "# the first\n",
                                                "class/alice smith/attention.py": "# the newcomer\n",
                                                "class/bob/attention.py": "# bob\n"})
    assert graded(collected) == {"alice_smith": "# the first\n", "alice_smith-2": "# the newcomer\n",
                                 "bob": "# bob\n"}
    assert any("alice smith/attention.py: another submission is also named 'alice_smith'; graded as "
               "'alice_smith-2'" in problem for problem in collected.problems), collected.problems


def test_a_browser_copy_or_a_notebook_beside_a_students_file_is_theirs_in_a_flat_folder(tmp_path):
    """Blind gradebook review (round 7): in a folder of one file per student, `bob (1).py` (a browser's second
    download) became a student `bob_1`, and `alice.ipynb` beside `alice.py` another: two rows for one student, the
    LMS files keeping one of them. Graded now as their own folder would be, and said; `team-1.py` and `team-2.py`
    stay two teams."""
    collected = collect_as("folder", tmp_path, {"class/bob.py": "# first\n", "class/bob (1).py": "# second\n",
                                                "class/alice.py": "# alice\n", "class/alice.ipynb": "{}",
                                                "class/team-1.py": "# one\n", "class/team-2.py": "# two\n"})
    assert graded(collected) == {"bob": "# second\n", "alice": "# alice\n", "team-1": "# one\n", "team-2": "# two\n"}
    assert "bob: several code files; graded bob (1).py (the latest copy), not bob.py" in collected.problems
    assert "alice: several code files; graded alice.py (a .py before a notebook), not alice.ipynb" in collected.problems
