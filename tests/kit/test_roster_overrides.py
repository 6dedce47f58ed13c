"""Rosters and overrides that cannot be right are refused, never turned into a gradebook record (issue 25).

A roster with one student on two rows; a roster that finds none, or under half, of the class's submissions
(another course's export, other headers); an override that names no student, a roster student without a
submission, a name two students share, two different points for one step; a regrade from a file sent later
while an override of the old file still applies. Each is refused with the file, the lines and what to do,
and nothing already written is lost. Most checks call the validating functions (and the CLI) in-process;
one class of three is graded once through the real CLI, and one regrade from a fixed file.
"""

import csv
import io
import json
import shutil
import subprocess
import sys

import pytest

from grader import cli
from grader.chapter import STEP_KEYS, TOTAL_POINTS
from grader.cohort import class_record
from grader.cohort.overrides import Override, OverrideError, read_overrides, resolve
from grader.integrations import lms
from grader.judging import results_json as results_io
from grader.judging.model import SubmissionResult
from grader.judging.model import TestResult as Verdict
from grader.paths import ROOT

CANVAS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention exercises (4242)"]
PEOPLE = [("Doe, Jane", "5000", "S5000", "jdoe"), ("Núñez, Zoë", "5001", "S5001", "znunez"),
          ("O'Brien, Seán", "5002", "S5002", "sobrien"), ("Ørsted, Åse", "5003", "S5003", "aorsted")]


def write_csv(path, rows, delimiter=","):
    with open(path, "w", newline="", encoding="utf-8-sig") as stream:  # Canvas exports carry a BOM
        csv.writer(stream, delimiter=delimiter).writerows(rows)
    return path


def rows_of(path):
    with open(path, newline="", encoding="utf-8-sig") as stream:
        return list(csv.reader(stream))


def result(name, score, suite):
    """A SubmissionResult whose tests (the real suite's) add up to `score`."""
    tests, left = [], score
    for test in suite:
        earned = min(test.points, left)
        left -= earned
        tests.append(Verdict(test.name, test.step, earned, test.points, "", test.visibility))
    return SubmissionResult(name, f"{name}.py", tests)


def canvas_gradebook(path, people=PEOPLE, repeat=None):
    """Canvas's gradebook export (header, Points Possible row, a row per student), `repeat` rows again at the end,
    as when two sections' exports are pasted together."""
    rows = [CANVAS, ["    Points Possible", "", "", "", "", "100.00"]]
    rows += [[name, ident, sis, login, "A", ""] for name, ident, sis, login in people]
    rows += [[name, ident, sis, login, "B", ""] for name, ident, sis, login in repeat or []]
    return write_csv(path, rows)


def canvas_class(suite, people=PEOPLE, scores=(90, 70, 100)):
    """Graded submissions from a Canvas download (lastfirst_USERID), with their origins."""
    graded, origins = [], {}
    for (name, ident, _, _), score in zip(people, scores):
        submission = f"{name.split(',')[0].lower().replace(' ', '')}_{ident}"
        graded.append(result(submission, score, suite))
        origins[submission] = {"lms": "canvas", "key": ident, "student": submission.rsplit("_", 1)[0]}
    return graded, origins


# -- 1. one student on two rows ----------------------------------------------------------------------
def test_a_gradebook_with_a_student_twice_is_refused_naming_the_rows(tmp_path, suite, maxima):
    """Before: canvas_grades.csv had two rows with ID 5000, one empty, one graded, exit 0."""
    roster = canvas_gradebook(tmp_path / "gradebook.csv", repeat=[PEOPLE[0]])
    graded, origins = canvas_class(suite)
    with pytest.raises(ValueError) as refused:
        lms.write_lms_files(tmp_path, graded, maxima, roster, origins=origins)
    message = str(refused.value)
    assert "gradebook.csv" in message and "'5000'" in message and "lines 3, 7" in message, message
    assert "Doe, Jane" in message and "one row" in message
    assert not (tmp_path / "canvas_grades.csv").exists() and not (tmp_path / "moodle_grades.csv").exists()
    # Refused as --roster too: before anything is graded.
    with pytest.raises(Exception) as usage:
        cli.roster_argument(str(roster))
    assert "lines 3, 7" in str(usage.value)


def test_a_moodle_worksheet_with_a_participant_twice_and_a_name_only_list_are_refused(tmp_path):
    header = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade", "Grade can be changed",
              "Last modified (submission)", "Last modified (grade)", "Feedback comments"]
    rows = [header, *([f"Participant {700100 + i}", name, f"s{i}@example.edu", "Submitted for grading", "", "100.00",
                       "Yes", "-", "-", ""] for i, name in enumerate(("Jane Doe", "Zoë Núñez", "Åse Ørsted")))]
    rows.append(["Participant 700101", "Zoë Núñez", "zoe.other@example.edu", "", "", "100.00", "Yes", "-", "-", ""])
    with pytest.raises(lms.RosterError, match=r"participant '700101' on lines 3, 5"):
        lms.read_roster(write_csv(tmp_path / "worksheet.csv", rows))
    with pytest.raises(lms.RosterError, match=r"name 'alice' on lines 2, 4"):
        lms.read_roster(write_csv(tmp_path / "plain.csv", [["name"], ["alice"], ["bob"], ["Alice"]]))
    # Two students may share a name: with their own ids both rows stay (an override must then use the id).
    two = lms.read_roster(write_csv(tmp_path / "namesakes.csv", [["Name", "Email"], ["Jo Li", "a@x.edu"],
                                                                 ["Jo Li", "b@x.edu"]]))
    assert [student.email for student in two.students] == ["a@x.edu", "b@x.edu"]
    # Two accounts may share an email (Moodle allows it): their usernames tell them apart; without them, refused.
    shared = lms.read_roster(write_csv(tmp_path / "shared.csv", [["Name", "Username", "Email"], ["Jo", "jo1", "f@x.edu"],
                                                                 ["Al", "al2", "F@x.edu"]]))
    assert [student.username for student in shared.students] == ["jo1", "al2"]
    with pytest.raises(lms.RosterError, match=r"email 'f@x.edu' on lines 2, 3"):
        lms.read_roster(write_csv(tmp_path / "emails.csv", [["Name", "Email"], ["Jo", "f@x.edu"], ["Jo", "F@x.edu"]]))


# -- 2. a roster that finds too few submissions ------------------------------------------------------
def test_a_roster_of_another_class_stops_instead_of_writing_blanks(tmp_path, suite, maxima):
    """Before: canvas_grades.csv and moodle_grades.csv with every grade cell empty, exit 0."""
    others = [(f"Other, Student{i}", str(9000 + i), f"S9{i:03d}", f"other{i}") for i in range(6)]
    roster = canvas_gradebook(tmp_path / "other_course.csv", people=others)
    graded, origins = canvas_class(suite)
    with pytest.raises(ValueError) as refused:
        lms.write_lms_files(tmp_path, graded, maxima, roster, origins=origins)
    message = str(refused.value)
    assert "other_course.csv" in message and "matches 0 of the class's 3 submission(s)" in message, message
    assert "'ID' (Canvas user id)" in message and "'SIS Login ID' (SIS login)" in message  # the columns read
    assert "'Attention exercises (4242)'" in message  # and those not read
    assert "'doe_5000'" in message and "line 3 'Other, Student0' (9000" in message  # examples, both sides
    assert not (tmp_path / "canvas_grades.csv").exists()


def test_other_headers_under_half_matched_and_rows_left_to_files_that_name_nobody_are_refused(tmp_path, suite, maxima):
    # A hand-made list whose names are not how the files are named: nothing matches.
    roster = write_csv(tmp_path / "names.csv", [["Name", "Section"], ["Jane Doe", "A"], ["Zoë Núñez", "A"]])
    graded = [result(name, 50, suite) for name in ("jdoe", "znunez")]
    with pytest.raises(lms.RosterError, match=r"matches 0 of the class's 2 .*'Name' \(name\), 'Section'"):
        lms.write_lms_files(tmp_path, graded, maxima, roster)
    # A Moodle worksheet of another assignment: 1 of 3 downloads' participant numbers found.
    header = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade", "Grade can be changed",
              "Last modified (submission)", "Last modified (grade)", "Feedback comments"]
    worksheet = write_csv(tmp_path / "worksheet.csv", [header] + [
        [f"Participant {number}", f"P{number}", f"p{number}@x.edu", "", "", "100.00", "Yes", "-", "-", ""]
        for number in (31, 900, 901, 902)])
    graded = [result(f"Person {number}_{number}", 60, suite) for number in (31, 32, 33)]
    origins = {g.name: {"lms": "moodle", "key": g.name.rsplit("_", 1)[1], "student": g.name} for g in graded}
    with pytest.raises(lms.RosterError, match=r"matches 1 of the class's 3 submission\(s\) \(expected: at least 2"):
        lms.write_lms_files(tmp_path, graded, maxima, worksheet, origins=origins)
    assert not any(tmp_path.glob("*_grades.csv")) and not (tmp_path / "moodle_worksheet.csv").exists()
    # Half found, files that name nobody, and rows without a file: which row is whose nothing says, so no file
    # (the import would leave those rows' grades empty, or clear them).
    graded, origins = canvas_class(suite, people=PEOPLE[:2])
    graded += [result("mallory", 10, suite), result("anon_77", 20, suite)]
    with pytest.raises(lms.RosterError, match=r"2 graded submission\(s\) match no roster row \('mallory', 'anon_77'\)"):
        lms.write_lms_files(tmp_path, graded, maxima, canvas_gradebook(tmp_path / "gb.csv"), origins=origins)
    assert not (tmp_path / "canvas_grades.csv").exists()
    # Every row found: a file of someone the roster does not hold is written nowhere but grades.csv, and said.
    graded, origins = canvas_class(suite, scores=(90, 70, 100, 40))
    graded += [result("mallory", 10, suite)]
    notes = lms.write_lms_files(tmp_path, graded, maxima, canvas_gradebook(tmp_path / "gb.csv"), origins=origins)
    assert "" not in [row[-1] for row in rows_of(tmp_path / "canvas_grades.csv")[2:]]
    assert any("mallory: matches no single student" in note for note in notes)


def test_ids_a_spreadsheet_rewrote_are_found_or_refused_never_left_empty(tmp_path, suite, maxima):
    """Blind gradebook review: Excel's `5001.0` and an SIS id without its leading zeros left a student who had
    submitted with an empty cell ("did not submit"), exit 0; `5.00E+03` has lost the id's digits."""
    rows = [CANVAS, ["    Points Possible", "", "", "", "", "100.00"]]
    rows += [[name, f"{ident}.0", sis.lstrip("S").lstrip("5"), login, "A", ""] for name, ident, sis, login in PEOPLE]
    graded, origins = canvas_class(suite, scores=(90, 70, 100, 40))
    lms.write_lms_files(tmp_path, graded, maxima, write_csv(tmp_path / "excel.csv", rows), origins=origins)
    assert [row[1] for row in rows_of(tmp_path / "canvas_grades.csv")[2:]] == ["5000", "5001", "5002", "5003"]
    assert [row[-1] for row in rows_of(tmp_path / "canvas_grades.csv")[2:]] == ["90", "70", "100", "40"]
    # a Gradescope export names a submission by its SID: '00126' where the roster (through Excel) has 126
    plain = write_csv(tmp_path / "sids.csv", [["Name", "SID", "Email"], ["Donald Knuth", "126", "dk@x.org"],
                                              ["Ada Lovelace", "815", "al@x.org"]])
    lms.write_lms_files(tmp_path, [result("00126", 80, suite), result("815", 60, suite)], maxima, plain)
    assert [row[-1] for row in rows_of(tmp_path / "moodle_grades.csv")[1:]] == ["80", "60"]
    # two ids that differ only by leading zeros: neither is guessed (the rows are refused, not filled)
    both = write_csv(tmp_path / "both.csv", [["Name", "SID"], ["A", "0126"], ["B", "00126"], ["C", "9"]])
    with pytest.raises(lms.RosterError, match="match no roster row"):
        lms.write_lms_files(tmp_path, [result("126", 80, suite), result("9", 60, suite)], maxima, both)
    lost = [[*row[:1], "5.00E+03", *row[2:]] if index == 3 else row for index, row in enumerate(rows)]
    with pytest.raises(lms.RosterError, match=r"line 4 Canvas user id '5.00E\+03'.*Export the roster again"):
        lms.read_roster(write_csv(tmp_path / "lost.csv", lost))


def test_a_name_is_found_exactly_before_it_is_found_as_a_file_name(tmp_path, suite, maxima):
    """`alice smith` and `alice_smith` are two students: each file goes to its own row, exact spelling first."""
    roster = write_csv(tmp_path / "names.csv", [["Student", "Email"], ["alice smith", "as1@x.edu"],
                                                ["alice_smith", "as2@x.edu"], ["Bob Jones", "bj@x.edu"]])
    # a row with an email is found by its name as well (a folder named after the student: `Bob Jones/`)
    graded = [result("alice smith", 100, suite), result("alice_smith", 79.75, suite), result("Bob_Jones", 50, suite)]
    lms.write_lms_files(tmp_path, graded, maxima, roster)
    assert [row[-1] for row in rows_of(tmp_path / "moodle_grades.csv")[1:]] == ["100", "79.75", "50"]


def test_a_last_comma_first_name_is_found_in_either_order(tmp_path, suite, maxima):
    """Blind gradebook review (round 7): Canvas's Student column reads "Lovelace, Ada"; `liskov_barbara/` was found
    as "Liskov, Barbara", `ada_lovelace/` and `Grace Hopper/` were not ("is it this class's export?")."""
    roster = write_csv(tmp_path / "canvas.csv", [["Student", "ID", "SIS User ID"], ["Lovelace, Ada", "5001", "a1"],
                                                 ["Hopper, Grace", "5002", "g1"], ["Liskov, Barbara", "5003", "b1"]])
    graded = [result("ada_lovelace", 100, suite), result("Grace Hopper", 79.75, suite),
              result("liskov_barbara", 50, suite)]
    lms.write_lms_files(tmp_path, graded, maxima, roster)
    assert [row[-1] for row in rows_of(tmp_path / "canvas_grades.csv")[2:]] == ["100", "79.75", "50"]


def test_a_canvas_export_with_semicolons_or_first_and_last_name_columns_is_read(tmp_path, suite, maxima):
    """Canvas writes ';' for locales with a decimal comma, and LastName/FirstName columns when asked; its
    "Manual Posting" row (assignments with a manual posting policy) is not a student."""
    rows = [["LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention exercises (4242)"],
            ["", "", "", "", "", "", "Manual Posting"], ["    Points Possible", "", "", "", "", "", "100,00"]]
    rows += [[name.split(", ")[0], name.split(", ")[1], ident, sis, login, "A", ""] for name, ident, sis, login in PEOPLE]
    roster = lms.read_roster(write_csv(tmp_path / "semicolons.csv", rows, delimiter=";"))
    assert [(s.name, s.canvas_id) for s in roster.students] == [(f"{n.split(', ')[1]} {n.split(', ')[0]}", i)
                                                                 for n, i, _, _ in PEOPLE]
    graded, origins = canvas_class(suite)
    lms.write_lms_files(tmp_path, graded, maxima, roster=roster, origins=origins)
    assert [row[-1] for row in rows_of(tmp_path / "canvas_grades.csv")[2:]] == ["90", "70", "100", ""]


# -- 3. overrides that cannot apply ------------------------------------------------------------------
def overrides_file(path, *lines):
    path.write_text("student,step,points,reason\n" + "".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_an_override_naming_no_student_is_an_error_with_the_line_and_the_closest_names(tmp_path):
    """Before: a note ("names no graded submission ... not applied") and exit 0."""
    overrides = read_overrides(overrides_file(tmp_path / "overrides.csv", "doejane_5000,masking,12,agreed",
                                              "nunezoe_5001,total,80,medical extension"))
    names = ["doejane_5000", "núñezzoë_5001", "obrienseán_5002"]
    with pytest.raises(ValueError) as refused:
        resolve(overrides, names, {"5001": "núñezzoë_5001", "Núñez, Zoë": "núñezzoë_5001"})
    message = str(refused.value)
    assert "overrides.csv, line 3" in message and "'nunezoe_5001' names no submission" in message, message
    assert "closest: 'núñezzoë_5001'" in message
    # A roster student without a submission, a name two students share, two points for one step.
    absent = read_overrides(overrides_file(tmp_path / "absent.csv", '"Ørsted, Åse",total,50,by hand'))
    with pytest.raises(OverrideError, match=r"absent.csv, line 2: 'Ørsted, Åse' is on the roster but has no submission"):
        resolve(absent, names, {}, {"Ørsted, Åse", "5003"})
    shared = [Override("Jo Li", "total", 50, "x", "o.csv, line 2")]
    with pytest.raises(OverrideError, match="names more than one student"):
        resolve(shared, names, class_record.aliases_of({"students": [
            {"name": "Jo Li", "email": "a@x", "submission": "doejane_5000"},
            {"name": "Jo Li", "email": "b@x", "submission": "obrienseán_5002"}]}))
    twice = read_overrides(overrides_file(tmp_path / "twice.csv", "doejane_5000,masking,12,a", "5000,masking,3,b"))
    with pytest.raises(OverrideError, match=r"twice.csv, line 3: a second override of masking .*twice.csv, line 2"):
        resolve(twice, names, {"5000": "doejane_5000"})
    same = read_overrides(overrides_file(tmp_path / "same.csv", "doejane_5000,masking,12,a", "doejane_5000,masking,12,a"))
    found, notes = resolve(same, names)
    assert len(found["doejane_5000"]) == 1 and "listed twice" in notes[0]


def test_an_override_of_a_missing_step_or_out_of_range_points_names_the_steps(tmp_path):
    with pytest.raises(ValueError) as refused:
        read_overrides(overrides_file(tmp_path / "o.csv", "a,masking,3,x", "b,maskin,3,y"))
    message = str(refused.value)
    assert "o.csv, line 3" in message and all(key in message for key in STEP_KEYS) and "did you mean masking" in message
    for points in ("16", "-1", "nan", "inf", "1_0", "1e1"):  # "1_0" was read as 10 (round 5)
        with pytest.raises(ValueError, match=r"o.csv, line 2: .* (outside 0..15|not a number)"):
            read_overrides(overrides_file(tmp_path / "o.csv", f"a,masking,{points},x"))
    with pytest.raises(ValueError, match=f"outside 0..{TOTAL_POINTS:g} for total"):
        read_overrides(overrides_file(tmp_path / "o.csv", "a,total,101,x"))


def test_an_overrides_file_excel_saved_with_semicolons_is_read(tmp_path):
    """Blind gradebook review: `student;step;points;reason`, as Excel saves CSV for a decimal-comma locale, was
    refused with "no 'student' column"; its "7,5" is 7.5 points there (a comma file keeps refusing "7,5")."""
    path = tmp_path / "o.csv"
    path.write_text("student;step;points;reason\nalice;masking;7,5;agreed, in office hours\nbob;total;90;late\n",
                    encoding="utf-8-sig")
    assert [(o.student, o.step, o.points, o.reason) for o in read_overrides(path)] == [
        ("alice", "masking", 7.5, "agreed, in office hours"), ("bob", "total", 90.0, "late")]
    with pytest.raises(ValueError, match="points '7,5' is not a number"):
        read_overrides(overrides_file(tmp_path / "c.csv", 'alice,masking,"7,5",x'))


# -- end to end: a class of three graded once ---------------------------------------------------------
@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, clean, stub):
    """alice, bob (a stub, with a masking override) and carol, with a roster (dave did not submit)."""
    folder = tmp_path_factory.mktemp("roster_class")
    submissions = folder / "class"
    submissions.mkdir()
    for name, text in (("alice", clean), ("bob", stub), ("carol", clean)):
        (submissions / f"{name}.py").write_text(text, encoding="utf-8")
    roster = write_csv(folder / "roster.csv", [["Name", "Username", "Email"], ["Alice A", "alice", "a@x.edu"],
                                               ["Bob B", "bob", "b@x.edu"], ["Carol C", "carol", "c@x.edu"],
                                               ["Dave D", "dave", "d@x.edu"]])
    overrides = overrides_file(folder / "overrides.csv", "b@x.edu,masking,12,agreed in office hours")
    out = folder / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--roster", str(roster),
                           "--overrides", str(overrides), "--out", str(out), "--time-limit", "60"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder, out


def snapshot(out):
    return {path.relative_to(out): path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()
            and not path.name.startswith(".")}


def test_bad_rosters_and_overrides_stop_a_class_run_before_grading(graded_class, tmp_path, capsys):
    folder, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    before = snapshot(out)
    other = write_csv(tmp_path / "export.csv", [["Student", "ID"], ["Zed", "1"], ["Yan", "2"]])
    typo = overrides_file(tmp_path / "typo.csv", "alice,total,90,late", "bobb,masking,12,agreed")
    dave = overrides_file(tmp_path / "dave.csv", "Dave D,total,70,graded on paper")
    for option, path, says in (("--roster", other, "matches 0 of the class's 3"),
                               ("--overrides", typo, "typo.csv, line 3: override for 'bobb'"),
                               ("--overrides", dave, "'Dave D' is on the roster but has no submission")):
        code = cli.main(["grade", str(folder / "class"), option, str(path), "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and says in err, err
        if path == typo:
            assert "closest: 'Bob B', 'bob'" in err
    assert snapshot(out) == before  # refused before grading: the class's files are as they were


def test_a_class_graded_again_with_a_new_file_for_an_overridden_student_asks_first(graded_class, tmp_path, clean,
                                                                                     capsys):
    """The same fault through `make grade`: a new download where bob resubmitted would apply the override of
    his old file to the new one. Refused before grading unless kept (or dropped with an overrides file)."""
    folder, graded = graded_class
    assert set(class_record.read_record(graded)["override_files"]) == {"bob"}
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    before = snapshot(out)
    download = tmp_path / "class"
    shutil.copytree(folder / "class", download)
    (download / "bob.py").write_text(clean, encoding="utf-8")
    code = cli.main(["grade", str(download), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "bob has 1 override(s)" in err and "grade with KEEP_OVERRIDES=1" in err, err
    assert snapshot(out) == before


def test_when_the_lms_files_cannot_be_written_grades_csv_and_results_stay(graded_class, tmp_path, maxima):
    """The write-time refusal (a class whose roster stopped matching): grades.csv, results and the report are
    written, the stale LMS files removed, the run refused."""
    _, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    results = {path.name: path.read_bytes() for path in (out / "results").iterdir()}
    (out / "grades.csv").unlink()
    record = class_record.read_record(out)
    record["roster"] = {"file": "export.csv", "text": "Student,ID\nZed,1\nYan,2\n"}
    record["overrides"] = []
    done = [results_io.read_results_json(out / "results" / name) for name in results]
    with pytest.raises(cli.UsageError) as refused:
        cli.write_class_files(out, done, maxima, record)
    message = str(refused.value)
    assert "matches 0 of the class's 3" in message and "grades.csv, results/ and the report" in message
    assert "moodle_grades.csv" in message and not (out / "moodle_grades.csv").exists()
    assert (out / "grades.csv").is_file() and (out / "report.html").is_file()
    assert {path.name: path.read_bytes() for path in (out / "results").iterdir()} == results


def test_a_regrade_from_a_fixed_file_over_an_override_is_an_explicit_choice(graded_class, tmp_path, clean, capsys):
    """Before: `regrade bob --submission fixed.py` kept bob's masking override: 97* instead of 100, exit 0."""
    folder, graded = graded_class
    grades = {row["submission"]: row for row in csv.DictReader(io.StringIO((graded / "grades.csv").read_text()))}
    assert grades["bob"]["masking"] == "12" and "agreed in office hours" in grades["bob"]["override"]
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    before = snapshot(out)
    fixed = tmp_path / "fixed.py"
    fixed.write_text(clean, encoding="utf-8")
    code = cli.main(["regrade", "bob", "--out", str(out), "--submission", str(fixed)])
    err = capsys.readouterr().err
    assert code == 2 and "bob has 1 override(s)" in err and "masking set to 12 (agreed in office hours)" in err, err
    assert "overrides.csv, line 2" in err and "regrade with KEEP_OVERRIDES=1" in err and "OVERRIDES=" in err
    assert snapshot(out) == before
    # Kept on purpose, it is said after the regrade; the same file regraded keeps them and says so too.
    basis = class_record.read_record(out)["override_files"]
    args = type("Args", (), {"submission": str(fixed), "keep_overrides": True})
    applying = [Override("b@x.edu", "masking", 12, "agreed in office hours", "overrides.csv, line 2")]
    line, digest = cli.kept_overrides("bob", applying, fixed, basis, args)
    assert line.startswith("still overridden: bob: masking set to 12") and digest != basis["bob"]
    args.keep_overrides = False
    line, digest = cli.kept_overrides("bob", applying, folder / "class" / "bob.py", basis, args)  # the same bytes
    assert "delete their line(s)" in line and digest == basis["bob"]
    # Dropped: an overrides file without bob's line; the fixed file gets its full grade, no mark.
    empty = overrides_file(tmp_path / "overrides.csv")
    done = subprocess.run([sys.executable, "-m", "grader", "regrade", "bob", "--out", str(out), "--submission",
                           str(fixed), "--overrides", str(empty), "--time-limit", "60"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    grades = {row["submission"]: row for row in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    assert grades["bob"]["total"] == f"{TOTAL_POINTS:g}" and "override" not in grades["bob"]
    assert {row[0]: row[-1] for row in rows_of(out / "moodle_grades.csv")[2:]}["Bob B"] == f"{TOTAL_POINTS:g}"
    assert "still overridden" not in done.stdout


def test_keep_overrides_is_a_make_knob_of_grade_and_regrade(tmp_path):
    from tests.kit.project import kit_project, shell_env

    project = kit_project(tmp_path / "kit")
    dry = subprocess.run(["make", "-n", "regrade", "STUDENT=bob", "SUBMISSION=fixed.py", "KEEP_OVERRIDES=1"],
                         cwd=project, capture_output=True, text=True, timeout=60, env=shell_env())
    assert dry.returncode == 0, dry.stderr
    assert "--submission 'fixed.py'" in dry.stdout and "--keep-overrides" in dry.stdout
    grade = subprocess.run(["make", "-n", "grade", "KEEP_OVERRIDES=1"], cwd=project, capture_output=True, text=True,
                           timeout=60, env=shell_env())
    assert "--keep-overrides" in grade.stdout
    plain = subprocess.run(["make", "-n", "regrade", "STUDENT=bob"], cwd=project, capture_output=True, text=True,
                           timeout=60, env=shell_env())
    assert "--keep-overrides" not in plain.stdout


def test_a_regrade_by_a_name_two_students_share_is_refused(tmp_path, capsys):
    """Before: `regrade "Jo Li"` regraded the first Jo Li of the roster, whichever was meant."""
    (tmp_path / "class.json").write_text(json.dumps({"final": {"lijo_5000": {}, "lijo_5001": {}}, "students": [
        {"name": "Jo Li", "canvas_id": "5000", "submission": "lijo_5000"},
        {"name": "Jo Li", "canvas_id": "5001", "submission": "lijo_5001"}]}), encoding="utf-8")
    assert cli.main(["regrade", "Jo Li", "--out", str(tmp_path)]) == 2
    assert "'Jo Li' names more than one student of the roster" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


# -- results/ that no longer holds the class (blind gradebook review) -------------------------------------------
def test_a_result_cut_short_refuses_a_regrade_of_another_before_its_journal_and_its_own_regrade_mends_it(
        graded_class, tmp_path, capsys):
    """Before: `regrade bob` over a truncated results/alice.json crashed (JSONDecodeError) after writing its
    journal, and every later command on OUT, the suggested `regrade alice` included, crashed the same way."""
    _, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    alice = out / "results" / "alice.json"
    alice.write_bytes(alice.read_bytes()[:300])
    before = snapshot(out)
    code = cli.main(["regrade", "bob", "--out", str(out), "--time-limit", "60"])
    err = capsys.readouterr().err
    assert code == 2 and "results/alice.json (" in err and "nothing was recorded" in err, err
    assert f"make grade SUBMISSION={graded_class[0] / 'class'}" in err and "Traceback" not in err
    assert not (out / class_record.PENDING).exists() and snapshot(out) == before
    code = cli.main(["report", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "alice.json cannot be read" in err and "STUDENT=alice" in err, err
    assert cli.main(["regrade", "alice", "--out", str(out), "--time-limit", "60"]) == 0
    assert cli.main(["report", "--out", str(out)]) == 0
    capsys.readouterr()


def test_a_report_over_results_that_lost_or_gained_a_file_is_refused(graded_class, tmp_path, capsys):
    """Before: with results/carol.json removed, the report counted 2 submissions and named carol nowhere, exit 0,
    beside a grades.csv and LMS files that still gave her a grade."""
    _, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    (out / "results" / "carol.json").rename(tmp_path / "carol.json")
    code = cli.main(["report", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "1 result(s) of the class missing (carol)" in err and "make grade SUBMISSION=" in err, err
    (tmp_path / "carol.json").rename(out / "results" / "mallory.json")
    code = cli.main(["report", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "missing (carol)" in err and "1 result(s) of no student of the class (mallory)" in err


def test_a_journal_whose_results_cannot_be_read_is_finished_by_grading_the_class_again(graded_class, tmp_path,
                                                                                       capsys):
    """A run stopped before its class files, then a result damaged: every command refuses, naming the file and the
    grade that mends it, and that grade does (no traceback, no OUT stuck)."""
    folder, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    record = class_record.read_record(out)
    class_record.write_pending(out, list(record["final"]), record)
    (out / "results" / "carol.json").write_text("{", encoding="utf-8")
    for command in (["report", "--out", str(out)], ["regrade", "bob", "--out", str(out), "--time-limit", "60"]):
        code = cli.main(command)
        err = capsys.readouterr().err
        assert code == 2 and "results/carol.json (" in err and "Grade the class again into it" in err, err
        assert (out / class_record.PENDING).exists()
    code = cli.main(["grade", str(folder / "class"), "--out", str(out), "--time-limit", "60"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert not (out / class_record.PENDING).exists()
    assert results_io.read_results_json(out / "results" / "carol.json").score == TOTAL_POINTS
    assert cli.main(["report", "--out", str(out)]) == 0
    capsys.readouterr()


def test_a_student_excused_in_the_canvas_export_stays_excused(tmp_path, suite, maxima):
    """Blind gradebook review: the export's EX for a student became the kit's score, with no note; imported, it
    would take the excuse away."""
    rows = [CANVAS, ["    Points Possible", "", "", "", "", "100.00"]]
    rows += [[name, ident, sis, login, "A", "EX" if ident == "5001" else "45"] for name, ident, sis, login in PEOPLE]
    graded, origins = canvas_class(suite, scores=(90, 70, 100, 40))
    notes = lms.write_lms_files(tmp_path, graded, maxima, write_csv(tmp_path / "gb.csv", rows), origins=origins)
    assert [row[-1] for row in rows_of(tmp_path / "canvas_grades.csv")[2:]] == ["90", "EX", "100", "40"]
    assert any("1 student(s) excused in" in note and "Núñez, Zoë" in note for note in notes), notes


def test_a_regrade_of_a_roster_student_without_a_submission_says_how_to_add_their_file(graded_class, capsys):
    """Blind gradebook review: `regrade STUDENT=<id of a late submitter>` said only "is not a submission of OUT"."""
    folder, graded = graded_class
    for student in ("dave", "d@x.edu", "Dave D"):
        code = cli.main(["regrade", student, "--out", str(graded)])
        err = capsys.readouterr().err
        assert code == 2 and "is on the roster but has no submission" in err, err
        assert f"make grade SUBMISSION={folder / 'class'} OUT={graded}" in err
    code = cli.main(["regrade", "zed", "--out", str(graded)])
    assert code == 2 and "'zed' is not a submission of" in capsys.readouterr().err


def test_a_resubmission_after_a_regrade_from_another_file_asks_which_counts(graded_class, tmp_path, stub, clean,
                                                                             capsys, caplog):
    """Blind gradebook review: after `regrade carol SUBMISSION=other.py`, a new download in which carol had sent a
    new file graded other.py again, exit 0, with the new file's late flag. Now the grade asks first; `regrade carol`
    without SUBMISSION grades the class's file (as the docs say) and ends the regrade from the other file."""
    folder, graded = graded_class
    out, download = tmp_path / "out", tmp_path / "class"
    shutil.copytree(graded, out)
    shutil.copytree(folder / "class", download)
    record = class_record.read_record(out)
    record["source"] = str(download)
    class_record.write_record(out, record)
    other = tmp_path / "other.py"
    other.write_text(stub, encoding="utf-8")
    assert cli.main(["regrade", "carol", "--out", str(out), "--submission", str(other), "--time-limit", "60"]) == 0

    def total(name):
        return float({row["submission"]: row for row in csv.DictReader((out / "grades.csv").open())}[name]["total"])

    assert total("carol") < TOTAL_POINTS
    assert cli.main(["grade", str(download), "--out", str(out), "--time-limit", "60"]) == 0  # same bytes: kept
    assert total("carol") < TOTAL_POINTS
    capsys.readouterr()
    (download / "carol.py").write_text(clean + "\n# resubmitted\n", encoding="utf-8")
    before = snapshot(out)
    code = cli.main(["grade", str(download), "--out", str(out), "--time-limit", "60"])
    err = capsys.readouterr().err
    assert code == 2 and "carol was regraded from" in err and "the class now holds another file" in err, err
    assert f"make regrade STUDENT=carol OUT={out} (from the class's own file)" in err and snapshot(out) == before
    assert "KEEP_REGRADES=1" in err
    # kept on purpose: graded from other.py again, and the new file is the one the regrade now stands over
    assert cli.main(["grade", str(download), "--out", str(out), "--time-limit", "60", "--keep-regrades"]) == 0
    assert total("carol") < TOTAL_POINTS
    assert cli.main(["grade", str(download), "--out", str(out), "--time-limit", "60"]) == 0  # asked once only
    assert total("carol") < TOTAL_POINTS
    with caplog.at_level("INFO"):
        assert cli.main(["regrade", "carol", "--out", str(out), "--time-limit", "60"]) == 0
    assert any("no longer from" in message for message in caplog.messages), caplog.messages
    assert total("carol") == TOTAL_POINTS and "carol" not in (class_record.read_record(out).get("regrades") or {})
    assert cli.main(["grade", str(download), "--out", str(out), "--time-limit", "60"]) == 0
    assert total("carol") == TOTAL_POINTS
    capsys.readouterr()


def test_an_override_or_regrade_naming_one_member_of_a_group_submission_is_refused(tmp_path, grader_cli):
    """Blind gradebook review (round 2): `5002,total,50,"Alan did not contribute"` lowered every member of Alan's
    group (the override applies to the group's submission), and `regrade STUDENT=5002 SUBMISSION=...` regraded
    the whole team, exit 0. Named by the submission, the group's grade may still change."""
    students = [{"name": "Ada Lovelace", "canvas_id": "5001", "group": "Team Alpha", "submission": "teamalpha_5001"},
                {"name": "Alan Turing", "canvas_id": "5002", "group": "Team Alpha", "submission": "teamalpha_5001"},
                {"name": "Grace Hopper", "canvas_id": "5003", "submission": "hoppergrace_5003"}]
    record = {"students": students}
    names = ["teamalpha_5001", "hoppergrace_5003"]
    aliases, absent, members = (class_record.aliases_of(record), class_record.absent_of(record),
                                class_record.members_of(record))
    assert members == {"teamalpha_5001": ["Ada Lovelace", "Alan Turing"]}
    with pytest.raises(OverrideError, match=r"'5002' is one of the 2 students graded from the group submission "
                                            r"teamalpha_5001 \(Ada Lovelace, Alan Turing\)"):
        resolve([Override("5002", "total", 50, "did not contribute")], names, aliases, absent, members)
    found, _ = resolve([Override("teamalpha_5001", "total", 50, "late"), Override("5003", "total", 90, "x")], names,
                       aliases, absent, members)
    assert set(found) == {"teamalpha_5001", "hoppergrace_5003"}
    out = tmp_path / "out"
    out.mkdir()
    final = {name: {"steps": {}, "total": 80, "overrides": [], "late": None} for name in names}
    class_record.write_record(out, {"students": students, "final": final, "source": str(tmp_path)})
    refused = grader_cli("regrade", "5002", "--out", out)
    assert refused.returncode == 2 and "give STUDENT=teamalpha_5001" in refused.stderr, refused.stderr


def test_an_overrides_line_with_more_cells_than_its_header_is_refused(tmp_path):
    """Blind gradebook review (round 2): `x,masking,5,5,"reason"` (a decimal comma, unquoted) gave 5 points with the
    reason "5", the real reason dropped, exit 0; `-0` showed as "-0" in grades.csv."""
    with pytest.raises(ValueError, match=r"o.csv, line 2: 5 cells where the header has 4 \(a decimal comma"):
        read_overrides(overrides_file(tmp_path / "o.csv", 'hoppergrace_5003,masking,5,5,"x"'))
    assert read_overrides(overrides_file(tmp_path / "z.csv", "a,masking,-0,x"))[0].points == 0.0
    assert str(read_overrides(overrides_file(tmp_path / "z.csv", "a,masking,-0,x"))[0].points) == "0.0"


def test_a_feedback_page_states_the_grade_an_override_gave(graded_class, tmp_path):
    """Blind gradebook review (round 2): bob's page said "Score 1.5 / 100" beside a grades.csv and LMS files that
    hold the override's grade; the page named no override. A page whose overrides changed is drawn again."""
    _, graded = graded_class
    page = (graded / "feedback" / "bob.html").read_text(encoding="utf-8")
    final = class_record.read_record(graded)["final"]["bob"]["total"]
    assert f"Your grade: {final:g} / {TOTAL_POINTS:g}</b>, changed by your instructor" in page
    assert "masking set to 12: agreed in office hours" in page
    assert "changed by your instructor" not in (graded / "feedback" / "alice.html").read_text(encoding="utf-8")
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    record = class_record.read_record(out)
    record["final"]["alice"]["overrides"] = [{"student": "alice", "step": "total", "points": 90, "reason": "late"}]
    record["final"]["alice"]["total"] = 90
    class_record.write_record(out, record)
    from grader.feedback import page

    assert page.write_pages(out) == 1  # alice's alone: the page whose overrides changed (as every class run does)
    assert "total set to 90: late" in (out / "feedback" / "alice.html").read_text(encoding="utf-8")


def test_a_regrade_or_report_while_a_grade_runs_says_in_use_not_stopped(graded_class, tmp_path, capsys):
    """Blind gradebook review (round 2): a regrade while a grade ran into the same OUT said "the last grade ... was
    stopped before it finished" (the running grade's mark), where report and grade said "in use"."""
    from grader.cohort.bulk import holding

    _, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    with holding(out):  # a grade under way: it holds OUT and has marked it unfinished
        class_record.mark_unfinished(out)
        for command in (["regrade", "bob", "--out", str(out)], ["report", "--out", str(out)]):
            code = cli.main(command)
            err = capsys.readouterr().err
            assert code != 0 and "is in use by another grading run" in err and "stopped" not in err, err


def test_a_student_who_leaves_twice_keeps_both_former_records(tmp_path):
    """Blind gradebook review (round 2): results/former/<name>.json was overwritten when a student left, came back
    with another file and left again: the first grade given was lost, with no note."""
    from grader.cohort.bulk import set_aside_former

    for folder in ("results", "feedback"):
        (tmp_path / folder).mkdir()
    for grade in ("first", "second"):
        (tmp_path / "results" / "turing.json").write_text(grade)
        (tmp_path / "feedback" / "turing.html").write_text(grade)
        assert set_aside_former(tmp_path, ["ada"]) == ["turing"]
    former = tmp_path / "results" / "former"
    assert (former / "turing.json").read_text() == "second" and (former / "turing.1.json").read_text() == "first"
    assert (tmp_path / "feedback" / "former" / "turing.1.html").read_text() == "first"


def test_a_regrade_from_a_file_that_changed_or_went_since_is_refused_not_graded_from_other_bytes(
        graded_class, tmp_path, stub, clean, capsys):
    """Blind gradebook review (round 4): a regrade from Downloads/fixed.py, then that path reused for the next
    student's fix; the next `make grade` graded the first student from the second's file (100 -> 83.75), exit 0.
    A regrade's file deleted sent the student back to the class's file in silence. Both now refuse, before grading."""
    folder, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    fixed = tmp_path / "Downloads" / "fixed.py"
    fixed.parent.mkdir()
    fixed.write_text(stub, encoding="utf-8")
    assert cli.main(["regrade", "carol", "--out", str(out), "--submission", str(fixed), "--time-limit", "60"]) == 0
    assert cli.main(["grade", str(folder / "class"), "--out", str(out), "--time-limit", "60"]) == 0  # same bytes
    capsys.readouterr()
    before = snapshot(out)
    fixed.write_text(clean + "\n# another student's fix\n", encoding="utf-8")
    code = cli.main(["grade", str(folder / "class"), "--out", str(out), "--time-limit", "60"])
    err = capsys.readouterr().err
    assert code == 2 and f"carol was regraded from {fixed}, which has changed since" in err, err
    assert f"make regrade STUDENT=carol SUBMISSION={fixed}" in err and snapshot(out) == before
    fixed.unlink()
    code = cli.main(["grade", str(folder / "class"), "--out", str(out), "--time-limit", "60", "--keep-regrades"])
    err = capsys.readouterr().err
    assert code == 2 and "which is gone since" in err and snapshot(out) == before, err
    assert cli.main(["regrade", "carol", "--out", str(out), "--time-limit", "60"]) == 0  # back to the class's file
    assert cli.main(["grade", str(folder / "class"), "--out", str(out), "--time-limit", "60"]) == 0
    capsys.readouterr()


def test_limits_a_regrade_gave_one_student_stay_when_the_class_is_graded_again(graded_class, tmp_path, caplog):
    """Blind gradebook review (round 4): `regrade slow TIME_LIMIT=30` (a class graded at 1 s), then a late
    submission and `make grade TIME_LIMIT=1`: slow was graded again at 1 s, 100 back to 88, exit 0. A regrade's
    limits are now the student's (class.json regrade_limits) until a regrade with the class's drops them."""
    folder, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    assert cli.main(["regrade", "carol", "--out", str(out), "--time-limit", "90"]) == 0
    assert class_record.read_record(out)["regrade_limits"] == {"carol": {"time_limit": 90.0}}
    kept = (out / "results" / "carol.json").read_bytes()
    with caplog.at_level("INFO"):
        assert cli.main(["grade", str(folder / "class"), "--out", str(out), "--time-limit", "60"]) == 0
    assert (out / "results" / "carol.json").read_bytes() == kept  # reused as graded at 90 s, not graded at 60 s
    assert any("carol: graded with time-limit 90.0" in message for message in caplog.messages), caplog.messages
    caplog.clear()
    with caplog.at_level("INFO"):  # a regrade without limits is the student's own again, not the class's
        assert cli.main(["regrade", "carol", "--out", str(out)]) == 0
    assert class_record.read_record(out)["regrade_limits"] == {"carol": {"time_limit": 90.0}}
    assert cli.main(["regrade", "carol", "--out", str(out), "--time-limit", "60"]) == 0
    assert class_record.read_record(out)["regrade_limits"] == {}


def test_a_result_replaced_by_another_run_is_refused_by_grade_and_report(graded_class, tmp_path, clean, capsys):
    """Blind gradebook review (round 4): `make grade SUBMISSION=solutions/attention.py RESULTS=<OUT>/results/bob.json`
    replaced bob's result; `make report` then showed a student "attention" with 100 beside a grades.csv that still
    said bob's grade, exit 0. RESULTS inside a class's results/ is now refused, and the report refuses a results
    file that is not the one grades.csv was written from."""
    _, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    solved = tmp_path / "attention.py"
    solved.write_text(clean, encoding="utf-8")
    before = snapshot(out)
    code = cli.main(["grade", str(solved), "--results", str(out / "results" / "bob.json")])
    err = capsys.readouterr().err
    assert code == 2 and "in the results folder of the graded class" in err and snapshot(out) == before, err
    elsewhere = tmp_path / "elsewhere.json"
    assert cli.main(["grade", str(solved), "--results", str(elsewhere)]) == 0
    shutil.copy(elsewhere, out / "results" / "bob.json")  # as a copy by hand would
    capsys.readouterr()
    code = cli.main(["report", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "1 result(s) replaced since" in err and "bob" in err, err


def test_a_regrade_finds_a_student_as_an_override_would(graded_class, tmp_path, stub, capsys):
    """Blind gradebook review (round 4): `make regrade STUDENT=<müller as macOS pastes it (NFD)>` and
    `STUDENT=<a roster id in another case>` were refused ("is not a submission"), names the overrides file
    accepts; an unknown name offered no close one."""
    import unicodedata

    _, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    assert cli.main(["regrade", "C@X.EDU", "--out", str(out), "--time-limit", "60"]) == 0  # carol's e-mail
    capsys.readouterr()
    assert cli.main(["regrade", "carl", "--out", str(out)]) == 2
    assert "closest: 'carol'" in capsys.readouterr().err
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / f"{unicodedata.normalize('NFC', 'müller')}.py").write_text(stub, encoding="utf-8")
    (folder / "zoe.py").write_text(stub, encoding="utf-8")
    other = tmp_path / "umlaut_out"
    assert cli.main(["grade", str(folder), "--out", str(other), "--time-limit", "60"]) == 0
    assert cli.main(["regrade", unicodedata.normalize("NFD", "MÜLLER"), "--out", str(other)]) == 0
    capsys.readouterr()


def test_a_regrade_from_a_newer_download_takes_its_late_mark(tmp_path, clean, stub):
    """Blind gradebook review (round 5): the download at the class's path replaced by a newer one where ada's upload
    is marked LATE; `regrade lovelaceada_5001` graded the new upload but kept the old `late=no`, exit 0."""
    folder = tmp_path / "canvas"
    folder.mkdir()
    (folder / "lovelaceada_5001_9001_attention.py").write_text(clean, encoding="utf-8")
    (folder / "turingalan_5002_9002_attention.py").write_text(clean, encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["grade", str(folder), "--out", str(out), "--time-limit", "60"]) == 0

    def late(name):
        return {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open())}[name]["late"]

    assert late("lovelaceada_5001") == "no"
    (folder / "lovelaceada_5001_9001_attention.py").unlink()
    (folder / "lovelaceada_LATE_5001_9101_attention.py").write_text(stub, encoding="utf-8")
    assert cli.main(["regrade", "lovelaceada_5001", "--out", str(out), "--time-limit", "60"]) == 0
    assert late("lovelaceada_5001") == "yes"


def test_a_regrade_from_a_canvas_file_must_be_the_students_and_takes_its_late_mark(tmp_path, clean, stub, capsys):
    """Blind gradebook review (round 7): `regrade lovelaceada_5001 SUBMISSION=liskovbarbara_LATE_5002_102_...` gave
    Ada Barbara's grade, exit 0; from `lovelaceada_LATE_5001_300_...` Ada stayed `late=no`, and so again after the
    class was graded once more (graded from the regrade's file)."""
    folder, out = tmp_path / "canvas", tmp_path / "out"
    folder.mkdir()
    (folder / "lovelaceada_5001_9001_attention.py").write_text(clean, encoding="utf-8")
    (folder / "liskovbarbara_5002_9002_attention.py").write_text(stub, encoding="utf-8")
    assert cli.main(["grade", str(folder), "--out", str(out), "--time-limit", "60"]) == 0
    before = (out / "grades.csv").read_bytes()
    barbaras = tmp_path / "liskovbarbara_LATE_5002_102_attention.py"
    barbaras.write_text(clean, encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["regrade", "lovelaceada_5001", "--submission", str(barbaras), "--out", str(out)]) == 2
    assert "user 5002" in capsys.readouterr().err and (out / "grades.csv").read_bytes() == before
    adas = tmp_path / "lovelaceada_LATE_5001_300_attention.py"
    adas.write_text(clean, encoding="utf-8")

    def late():
        return {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open())}["lovelaceada_5001"]["late"]

    assert late() == "no"
    assert cli.main(["regrade", "lovelaceada_5001", "--submission", str(adas), "--out", str(out)]) == 0
    assert late() == "yes"
    assert cli.main(["grade", str(folder), "--out", str(out), "--time-limit", "60"]) == 0
    assert late() == "yes", "graded from the regrade's file, with that upload's late mark"


def test_a_regrade_from_a_changed_class_zip_says_so_and_names_the_zip_not_a_temporary_folder(tmp_path, clean, stub,
                                                                                               caplog, capsys):
    """Blind gradebook review (round 7): the class's zip replaced by a newer download, `regrade ada` graded Ada's new
    file beside a class graded from the old one without a word, and said "regraded ... from /tmp/grade-zip-.../..."
    (a folder gone when the command ends)."""
    import zipfile

    archive, out = tmp_path / "class.zip", tmp_path / "out"

    def download(ada):
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("ada.py", ada)
            zipped.writestr("bob.py", stub)

    download(clean)
    assert cli.main(["grade", str(archive), "--out", str(out), "--time-limit", "60"]) == 0
    capsys.readouterr()
    caplog.clear()
    with caplog.at_level("INFO"):
        assert cli.main(["regrade", "ada", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "has changed" not in caplog.text + printed.err and f"from {archive}: ada.py" in printed.out
    download(clean + "\n# fixed after the deadline\n")
    with caplog.at_level("INFO"):
        assert cli.main(["regrade", "ada", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    said = caplog.text + printed.err + printed.out
    assert f"ada's file in {archive} has changed since the class was graded" in said, said
    assert "grade-zip-" not in said


def test_a_departed_students_record_is_kept_when_another_takes_the_name(tmp_path, clean, stub):
    """Blind gradebook reviews (rounds 7 and 8): `sean o brien/` and `sean o'brien/` graded as sean_o_brien and
    sean_o_brien-2; once the first left, the second took the plain name and its new result overwrote the departed
    student's (in neither results/ nor former/), exit 0. Names stay a function of the class as it is (round 8 showed
    names kept from an OUT's history swapping students through regrades and merges); the record is kept."""
    folder, out = tmp_path / "class", tmp_path / "out"
    for name, text in (("sean o brien", stub), ("sean o'brien", clean), ("bob", clean)):
        (folder / name).mkdir(parents=True)
        (folder / name / "attention.py").write_text(text, encoding="utf-8")
    assert cli.main(["grade", str(folder), "--out", str(out), "--time-limit", "60"]) == 0
    departed = (out / "results" / "sean_o_brien.json").read_bytes()
    shutil.rmtree(folder / "sean o brien")
    assert cli.main(["grade", str(folder), "--out", str(out), "--time-limit", "60"]) == 0
    rows = {row["submission"]: row["total"] for row in csv.DictReader((out / "grades.csv").open())}
    assert rows == {"bob": "100", "sean_o_brien": "100"}, rows
    assert departed in [path.read_bytes() for path in (out / "results" / "former").glob("*.json")]


def test_an_override_is_not_carried_to_another_student_under_the_same_name(tmp_path, clean, stub, capsys):
    """Blind gradebook review (round 7): `alice smith.py` graded as alice_smith with an override; a new student's
    `alice_smith.py` takes the name (spelt so): the refusal called it "another file" and offered KEEP_OVERRIDES=1,
    which gave the newcomer the first student's 50. Now it says whose the name is and where the override belongs."""
    folder, out = tmp_path / "class", tmp_path / "out"
    folder.mkdir()
    (folder / "alice smith.py").write_text(clean, encoding="utf-8")
    (folder / "bob.py").write_text(clean, encoding="utf-8")
    overrides = write_csv(tmp_path / "overrides.csv", [["student", "step", "points", "reason"],
                                                        ["alice_smith", "total", "50", "late penalty"]])
    assert cli.main(["grade", str(folder), "--out", str(out), "--overrides", str(overrides), "--time-limit", "60"]) == 0
    (folder / "alice_smith.py").write_text(stub, encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["grade", str(folder), "--out", str(out), "--time-limit", "60"]) == 2
    said = capsys.readouterr().err
    assert "another student's file" in said and "under its name now, alice_smith-2" in said, said
    assert "KEEP_OVERRIDES" not in said


def test_a_regrade_from_another_students_lms_file_is_refused_by_roster_or_moodle_id(tmp_path, clean, stub, capsys):
    """Blind gradebook review (round 8): a class graded from a teacher's folder with a Canvas roster took Barbara's
    Canvas-named file for Ada (her Canvas cell became 49.375); a Moodle download took Donald's file for Ada. Both exit
    0. The roster's Canvas ID, and the download's participant number, say whose a file is."""
    folder, out = tmp_path / "class", tmp_path / "out"
    folder.mkdir()
    (folder / "ada_lovelace.py").write_text(clean, encoding="utf-8")
    (folder / "barbara_liskov.py").write_text(stub, encoding="utf-8")
    roster = write_csv(tmp_path / "canvas.csv", [["Student", "ID", "SIS User ID"], ["Lovelace, Ada", "5001", "a1"],
                                                 ["Liskov, Barbara", "5002", "b1"]])
    assert cli.main(["grade", str(folder), "--out", str(out), "--roster", str(roster), "--time-limit", "60"]) == 0
    barbaras = tmp_path / "liskovbarbara_LATE_5002_902_attention.py"
    barbaras.write_text(stub, encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["regrade", "ada_lovelace", "--submission", str(barbaras), "--out", str(out)]) == 2
    assert "user 5002" in capsys.readouterr().err
    moodle, moodle_out = tmp_path / "moodle", tmp_path / "moodle_out"
    moodle.mkdir()
    (moodle / "Ada Lovelace_100001_assignsubmission_file_attention.py").write_text(clean, encoding="utf-8")
    (moodle / "Donald Knuth_100003_assignsubmission_file_attention.py").write_text(stub, encoding="utf-8")
    assert cli.main(["grade", str(moodle), "--out", str(moodle_out), "--time-limit", "60"]) == 0
    donalds = tmp_path / "Donald Knuth_100003_assignsubmission_file_attention.py"
    donalds.write_text(clean, encoding="utf-8")
    before = (moodle_out / "grades.csv").read_bytes()
    capsys.readouterr()
    assert cli.main(["regrade", "Ada_Lovelace_100001", "--submission", str(donalds), "--out", str(moodle_out)]) == 2
    assert "participant 100003" in capsys.readouterr().err and (moodle_out / "grades.csv").read_bytes() == before


def test_a_regrade_that_cannot_find_its_file_says_why(graded_class, tmp_path, capsys):
    """Blind gradebook review (round 5): a class moved since said "s.zip does not exist; give a .py, .ipynb, a
    folder of them or a .zip" (regrade takes no class path); a student who left the class was "not a submission
    ... no name is close" beside their results/former file; a SUBMISSION that does not exist was "not a .py or
    .ipynb file"."""
    _, graded = graded_class
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    assert cli.main(["regrade", "carol", "--out", str(out), "--submission", str(tmp_path / "gone.py")]) == 2
    assert "gone.py does not exist" in capsys.readouterr().err
    (out / "results" / "former").mkdir(exist_ok=True)
    shutil.copy(out / "results" / "carol.json", out / "results" / "former" / "zed.json")
    assert cli.main(["regrade", "zed", "--out", str(out)]) == 2
    assert "'zed' left the class" in capsys.readouterr().err
    record = class_record.read_record(out)
    record["source"] = str(tmp_path / "moved.zip")
    class_record.write_record(out, record)
    assert cli.main(["regrade", "carol", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "moved.zip (OUT/class.json), which is no longer there" in err and "SUBMISSION=<file>" in err, err
