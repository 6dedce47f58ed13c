"""The nbgrader course (dist/nbgrader), graded by the real nbgrader 0.9.6.

One course is built per session; a roster is imported (`db student import`),
the release notebook is submitted filled with the solution, as released (the
stubs), and with catalogue bugs, and `nbgrader autograde`, `generate_feedback`
and `export` run for real. nbgrader's scores must equal the kit grader's, step
by step, on the same notebooks.
"""

import csv
import html
import inspect
import json
import re
import time
from pathlib import Path

import pytest
from grader.faults.bugs import BUGS

from grader.build.exercises import BEGIN, CHAPTER, END, SOLUTION, code_sections
from grader.integrations import nbgrader as course_builder
from grader.chapter import STEP_KEYS, TOTAL_POINTS

pytestmark = pytest.mark.slow(reason='builds an nbgrader course and runs `nbgrader autograde` for real')

BUG_IDS = ("masking_not_renormalised", "causal_dropout_on_context", "mha_split_view_without_transpose")
STUDENTS = [  # id, first name, last name, email: a comma and non-ASCII letters must survive the export
    ("solution", "José", "Núñez, Jr.", "jose@example.edu"),
    ("stub", "Zoë", "O'Brien", "zoe@example.edu"),
    *((bug_id, "Bug", bug_id, "") for bug_id in BUG_IDS),
    ("absent", "Ana", "Ausente", "ana@example.edu"),  # never submits: an empty score, not a zero
]


# Appended to the solution: a correct function that warns and writes to stderr past Python's
# sys.stderr, as libraries do. nbgrader zeroes a test cell with stderr output; the course must not.
NOISY = '''
import os
import warnings

_quiet_init_qkv_weights = init_qkv_weights


def init_qkv_weights(d_in, d_out):
    warnings.warn("a harmless UserWarning from the student's code")
    os.write(2, b"UserWarning: written straight to file descriptor 2\\n")
    return _quiet_init_qkv_weights(d_in, d_out)
'''


def filled(release_text, source):
    """The release notebook with each step's code cell (and the imports) taken from `source`."""
    document = json.loads(release_text)
    sections = code_sections(source)
    for cell in document["cells"]:
        key = cell["id"].removesuffix("-code")
        if cell["id"].endswith("-code") and key in sections:
            cell["source"] = sections[key]
    return json.dumps(document, indent=1, ensure_ascii=False)


def plain_text(page):
    """An HTML page as the text a reader sees (tags gone, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    dist = tmp_path_factory.mktemp("dist")
    course_builder.build(dist)
    return dist / "nbgrader"


@pytest.fixture(scope="module")
def submissions(course, clean):
    release = (course / "release" / "attention" / "attention.ipynb").read_text()
    bugs = {bug.id: bug for bug in BUGS}
    noisy = clean.replace("# %% step: scaling", f"{NOISY}\n\n# %% step: scaling")  # in the projection cell
    notebooks = {"solution": filled(release, noisy), "stub": release}
    notebooks.update({bug_id: filled(release, bugs[bug_id].apply(clean)) for bug_id in BUG_IDS})
    return notebooks


@pytest.fixture(scope="module")
def graded(course, submissions, suite):
    """Run the nbgrader pipeline once: import, submit, autograde, feedback, export."""
    roster = course / "students.csv"
    with open(roster, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["id", "first_name", "last_name", "email"])
        writer.writerows(STUDENTS)
    course_builder.nbgrader(course, "db", "student", "import", str(roster))
    course_builder.nbgrader(course, "db", "assignment", "add", "attention", "--duedate=2030-01-01 00:00:00 UTC")
    for student, text in submissions.items():
        folder = course / "submitted" / student / "attention"
        folder.mkdir(parents=True)
        (folder / "attention.ipynb").write_text(text)
        (folder / "timestamp.txt").write_text("2029-12-31 12:00:00 UTC")
    # The stub's author also submits hidden tests of their own that always pass: they must not be used.
    planted = course / "submitted" / "stub" / "attention" / course_builder.HIDDEN_FOLDER / "hidden"
    planted.mkdir(parents=True)
    (planted / "test_planted.py").write_text("from grader.testing import graded\n" + "".join(
        f"\n@graded({json.dumps(test.name)}, points={test.points})\ndef test_{index}(student):\n    pass\n"
        for index, test in enumerate(suite) if test.kind == "hidden"))
    started = time.monotonic()
    course_builder.nbgrader(course, "autograde", "attention")
    seconds = time.monotonic() - started
    print(f"nbgrader autograde: {seconds:.1f}s for {len(submissions)} notebooks "
          f"({seconds / len(submissions):.1f}s each)")
    course_builder.nbgrader(course, "generate_feedback", "attention")
    course_builder.nbgrader(course, "export", "--to", str(course / "export.csv"))
    return course


@pytest.fixture(scope="module")
def exported(graded):
    with open(graded / "export.csv", newline="", encoding="utf-8") as stream:
        return {row["student_id"]: row for row in csv.DictReader(stream)}


def test_source_notebook_has_valid_nbgrader_cells(course, suite):
    source = json.loads((course / "source" / "attention" / "attention.ipynb").read_text())
    release = json.loads((course / "release" / "attention" / "attention.ipynb").read_text())
    cells = {cell["id"]: cell for cell in source["cells"]}
    graded_cells = [cell for cell in source["cells"] if cell["metadata"].get("nbgrader", {}).get("grade")]
    assert len(graded_cells) == len(suite)
    assert sum(cell["metadata"]["nbgrader"]["points"] for cell in graded_cells) == TOTAL_POINTS
    for cell in graded_cells:
        meta = cell["metadata"]["nbgrader"]
        assert meta["schema_version"] == 3 and meta["locked"] and not meta["solution"]
        assert cell["id"] == meta["grade_id"]
    for test in suite:  # every kit test is called by exactly one cell, hidden ones inside the markers
        calls = [cell for cell in graded_cells if json.dumps(test.name, ensure_ascii=False) in "".join(cell["source"])]
        assert len(calls) == 1, test.name
        assert calls[0]["metadata"]["nbgrader"]["points"] == test.points
        assert ("### BEGIN HIDDEN TESTS" in "".join(calls[0]["source"])) == (test.kind == "hidden")
    for key in STEP_KEYS:
        meta = cells[f"{key}-code"]["metadata"]["nbgrader"]
        assert meta["solution"] and not meta["grade"] and not meta["locked"]
    assert cells["kit-setup"]["metadata"]["nbgrader"]["locked"]
    assert "warnings.filterwarnings" in "".join(cells["kit-setup"]["source"])
    # The release: stubs instead of solutions, hidden tests gone, public checks kept; the same for
    # every file shipped next to the notebook (grader/, tests/public/).
    narrative = CHAPTER.read_text()  # the chapter may quote a call, e.g. `self.register_buffer(`
    solution_lines = {line.strip() for line in _solution_region_lines()
                      if len(line.strip()) > 12 and line.strip() not in narrative}
    assert solution_lines
    for path in (course / "release").rglob("*"):
        if path.is_file():
            text = path.read_text()
            text = json.dumps(json.loads(text)) if path.suffix == ".ipynb" else text
            leaked = [line for line in solution_lines if (json.dumps(line)[1:-1] if path.suffix == ".ipynb"
                                                          else line) in text]
            assert not leaked, f"{path.relative_to(course)} holds solution code: {leaked[:3]}"
    for test in suite:
        assert (json.dumps(test.name, ensure_ascii=False)[1:-1] in json.dumps(release, ensure_ascii=False)) \
            == (test.kind == "public"), test.name
    assert not list(course.glob("release/**/test_*_hidden.py")) and not list(course.glob("release/**/oracle.py"))


def _solution_region_lines():
    inside = False
    for line in SOLUTION.read_text().splitlines():
        if line.strip().startswith(BEGIN):
            inside = True
        elif line.strip().startswith(END):
            inside = False
        elif inside:
            yield line


def test_config_handles_stderr_hidden_tests_and_export(course):
    config = (course / "nbgrader_config.py").read_text()
    assert "c.IgnorePattern.enabled = True" in config
    assert re.search(r"c\.GenerateFeedback\.preprocessors = \[ClearHiddenTests,", config)
    assert 'c.ExportApp.plugin_class = "kit_csv_export.QuotedCsvExport"' in config


def test_autograde_matches_the_kit_grader_step_by_step(graded, submissions, exported, grade):
    assert exported["solution"]["score"] == f"{TOTAL_POINTS:g}"
    assert exported["stub"]["score"] == "0"
    for student, text in submissions.items():
        kit = grade(text, name="attention.ipynb", step_seconds=60)  # generous: test machines are loaded
        nbgrader_steps = {key: float(exported[student][key]) for key in STEP_KEYS}
        assert nbgrader_steps == kit.step_scores(), (student, [(t.name, t.output) for t in kit.tests
                                                               if t.score < t.max_score])
        assert float(exported[student]["score"]) == pytest.approx(kit.score)
    bugs = {bug.id: bug for bug in BUGS}
    for bug_id in BUG_IDS:  # each bug is caught, in its own step only
        steps = {key: float(exported[bug_id][key]) for key in STEP_KEYS}
        assert 0 <= steps[bugs[bug_id].step] < float(exported["solution"][bugs[bug_id].step]), bug_id


def test_feedback_never_shows_hidden_tests(graded, suite):
    pages = {path.parts[-3]: plain_text(path.read_text()) for path in graded.glob("feedback/*/attention/attention.html")}
    assert set(pages) == {"solution", "stub", *BUG_IDS}
    hidden_lines = set()
    for test in suite:
        if test.kind == "hidden":
            for line in inspect.getsource(test.function).splitlines()[2:]:  # skip the decorator and def
                if len(line.strip()) > 30 and not line.strip().startswith(("#", '"', "f\"")):
                    hidden_lines.add(line.strip())
    for student, text in pages.items():
        assert "BEGIN HIDDEN TESTS" not in text, student
        for test in suite:
            call = f"kit.check({json.dumps(test.name, ensure_ascii=False)}"
            assert (call in text) == (test.kind == "public"), (student, test.name)
        leaked = [line for line in hidden_lines if line in text]
        assert not leaked, (student, leaked[:3])
    assert "CheckFailed" in pages["stub"] and "not implemented yet" in pages["stub"]


def test_export_quotes_names_and_keeps_review_flags(graded, exported):
    raw = (graded / "export.csv").read_text(encoding="utf-8")
    assert '"Núñez, Jr."' in raw  # quoted: the comma stays inside the field
    header = raw.splitlines()[0].split(",")
    assert {"needs_manual_grade", "flagged", "failed_tests", "submitted"} <= set(header)
    assert exported["solution"]["last_name"] == "Núñez, Jr." and exported["stub"]["first_name"] == "Zoë"
    assert exported["solution"]["needs_manual_grade"] == "no" and exported["solution"]["failed_tests"] == "no"
    assert exported["stub"]["failed_tests"] == "yes"
    absent = exported["absent"]
    assert absent["submitted"] == "no" and absent["score"] == "" and absent["raw_score"] == ""
    assert all(absent[key] == "" for key in STEP_KEYS)
    assert len(exported) == len(STUDENTS)


def test_release_ships_public_tests_and_grader_only(course):
    release = course / "release" / "attention"
    names = {str(path.relative_to(release)) for path in release.rglob("*.py")}
    assert "grader/integrations/incell.py" in names and "tests/public/test_masking.py" in names
    assert not any("hidden" in name or name.endswith("oracle.py") for name in names)
    assert (course / "kit_hidden_tests" / "hidden" / "oracle.py").is_file()
    assert not any(Path(name).parts[0] == "solutions" for name in names)
