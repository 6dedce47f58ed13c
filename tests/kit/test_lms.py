"""Grades in from Canvas and Gradescope, out to Canvas and Moodle (grader/lms.py).

The CSVs are checked against the import formats the LMSs document: Canvas
(Student, ID, SIS User ID, SIS Login ID, Section, then `Title (assignment_id)`
columns, an optional `Points Possible` row) and Moodle (a user identifier column
mapped at upload, one column per grade item). A student without a submission
gets an empty cell; commas and non-ASCII names survive.
"""

import csv
from decimal import ROUND_HALF_UP, Decimal
import io
import subprocess
import sys
import zipfile

import pytest

from grader.chapter import TOTAL_POINTS
from grader.cohort import lms_names
from grader.integrations import lms
from grader.judging.model import SubmissionResult
from grader.judging.model import TestResult as Verdict
from grader.cohort.submissions import collect
from grader.paths import ROOT

CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def class_of_30():
    """30 students: (display name, Canvas id, SIS id, login, email). Names with commas and accents."""
    people = [("Doe, Jane", "Jane", "Doe"), ("Núñez, Zoë", "Zoë", "Núñez"), ("Ørsted, Åse", "Åse", "Ørsted"),
              ("O'Brien, Seán", "Seán", "O'Brien")]
    people += [(f"Student{i:02d}, Test", "Test", f"Student{i:02d}") for i in range(len(people), 30)]
    return [{"name": name, "first": first, "last": last, "id": str(5000 + i), "sis": f"S{i:04d}",
             "login": f"{first.lower()}{i}", "email": f"student{i}@example.edu"}
            for i, (name, first, last) in enumerate(people)]


ABSENT = {1, 7, 29}  # Zoë among them: a non-ASCII name with an empty cell


def result(name, score, suite):
    """A SubmissionResult whose tests (the real suite's) add up to `score` (of TOTAL_POINTS)."""
    tests, left = [], score
    for test in suite:
        earned = min(test.points, left)
        left -= earned
        tests.append(Verdict(test.name, test.step, earned, test.points, "", test.visibility))
    return SubmissionResult(name, f"{name}.py", tests)


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8-sig") as stream:  # Canvas exports carry a BOM
        csv.writer(stream).writerows(rows)
    return path


def read_csv(path):
    raw = path.read_bytes().decode("utf-8")
    return raw, list(csv.reader(io.StringIO(raw)))


@pytest.fixture
def canvas_roster(tmp_path):
    """A Canvas gradebook export: header, Points Possible row, one row per student."""
    rows = [[*CANVAS_HEADER, "Attention exercises (4242)", "Quiz 1 (777)"],
            ["    Points Possible", "", "", "", "", f"{TOTAL_POINTS:.2f}", "10.00"]]
    rows += [[p["name"], p["id"], p["sis"], p["login"], "Section A", "", "7"] for p in class_of_30()]
    return write_csv(tmp_path / "canvas_export.csv", rows)


def test_canvas_csv_for_a_class_of_30_with_3_missing(canvas_roster, tmp_path, suite, maxima):
    people = class_of_30()
    # Submissions named as a Canvas bulk download names them: lastfirst_USERID.
    graded = [result(f"{p['last'].lower()}{p['first'].lower()}_{p['id']}", 40 + i, suite)
              for i, p in enumerate(people) if i not in ABSENT]
    notes = lms.write_lms_files(tmp_path, graded, maxima, canvas_roster)
    raw, rows = read_csv(tmp_path / "canvas_grades.csv")
    assert rows[0] == [*CANVAS_HEADER, "Attention exercises (4242)"]  # the export's own column, id kept
    assert rows[1] == ["Points Possible", "", "", "", "", f"{TOTAL_POINTS:g}"]
    assert len(rows) == 2 + 30
    for i, (row, person) in enumerate(zip(rows[2:], people)):
        assert row[:5] == [person["name"], person["id"], person["sis"], person["login"], "Section A"]
        assert row[5] == ("" if i in ABSENT else f"{40 + i}"), person["name"]
    assert '"Doe, Jane"' in raw and "Núñez, Zoë" in raw and "\r\n" in raw
    assert sum(row[5] == "" for row in rows[2:]) == 3
    assert any("3 of 30 roster students have no submission" in note for note in notes)


def test_moodle_csv_for_a_class_of_30_with_3_missing(tmp_path, suite, maxima):
    people = class_of_30()
    roster = write_csv(tmp_path / "moodle_participants.csv",
                       [["First name", "Last name", "Email address", "Username"],
                        *([p["first"], p["last"], p["email"], p["login"]] for p in people)])
    graded = [result(p["login"], 60 + i, suite) for i, p in enumerate(people) if i not in ABSENT]
    lms.write_lms_files(tmp_path, graded, maxima, roster)
    raw, rows = read_csv(tmp_path / "moodle_grades.csv")
    assert rows[0] == ["Full name", "Email address", "Username", lms.ASSIGNMENT_TITLE]
    assert len(rows) == 1 + 30
    for i, (row, person) in enumerate(zip(rows[1:], people)):
        assert row == [f"{person['first']} {person['last']}", person["email"], person["login"],
                       "" if i in ABSENT else f"{60 + i}"]
    assert "Zoë Núñez" in raw and "Åse Ørsted" in raw


def test_canvas_bulk_download_names_parse_to_user_ids():
    late = lms_names.parse_canvas_name("nunezzoe_late_5001_99123_attention.ipynb")
    assert (late.student, late.user_id, late.submission_id, late.original, late.late) == \
        ("nunezzoe", "5001", "99123", "attention.ipynb", True)
    on_time = lms_names.parse_canvas_name("doejane_5000_99124_my_attention_v2.py")
    assert (on_time.user_id, on_time.original, on_time.late, on_time.name) == \
        ("5000", "my_attention_v2.py", False, "doejane_5000")
    assert lms_names.parse_canvas_name("attention.py") is None
    assert lms_names.parse_canvas_name("alice_attention.py") is None


def test_a_canvas_name_holding_digits_cannot_claim_another_students_id(tmp_path):
    """Canvas keeps word characters in the name part, so `aa_5_6` is a possible name: read too early, its file
    claims user 5. Each file takes the reading that fits the download; a clash no reading resolves is graded
    apart and reported, and never drops a file."""
    readings = lms_names.canvas_readings("aa_5_6_77_200_attention.py")
    assert [(r.student, r.user_id, r.original) for r in readings] == [
        ("aa", "5", "77_200_attention.py"), ("aa_5", "6", "200_attention.py"), ("aa_5_6", "77", "attention.py")]
    assert [(r.student, r.late) for r in lms_names.canvas_readings("zoe_late_7_8_a.py")][:1] == [("zoe", True)]
    folder = tmp_path / "download"
    folder.mkdir()
    for name in ("bobsmith_5_100_solution.py", "aa_5_6_77_200_attention.py", "carol_9_300_attention.py"):
        (folder / name).write_text("x = 1\n")
    collected = collect(folder)
    assert sorted(name for name, _ in collected.submissions) == ["aa_5_6", "bobsmith_5", "carol_9"]
    assert collected.origins["bobsmith_5"].key == "5" and collected.origins["aa_5_6"].key == "6"
    assert not any("claimed" in problem for problem in collected.problems)
    # Two names under one id, neither readable another way: both graded, the clash said.
    (folder / "aa_5_6_77_200_attention.py").unlink()
    (folder / "mallory_5_101_attention.py").write_text("x = 2\n")
    collected = collect(folder)
    assert sorted(name for name, _ in collected.submissions) == ["bobsmith_5", "carol_9", "mallory_5"]
    assert any("Canvas user id 5 is claimed by files of 2 names (bobsmith, mallory)" in problem
               for problem in collected.problems)


@pytest.mark.slow(reason='grades a Canvas zip through `python -m grader grade`')
def test_canvas_bulk_zip_graded_into_canvas_csv(tmp_path, clean, stub):
    """End to end: `grade submissions.zip --roster export.csv` with a late file and students missing."""
    people = class_of_30()[:5]
    roster = write_csv(tmp_path / "export.csv", [CANVAS_HEADER, *([p["name"], p["id"], p["sis"], p["login"], "A"]
                                                                 for p in people)])
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr(f"doejane_{people[0]['id']}_811_attention.py", clean)
        zipped.writestr(f"nunezzoe_late_{people[1]['id']}_812_attention.py", stub)  # late, and a real zero
        zipped.writestr(f"orstedase_{people[2]['id']}_813_notes.txt", "I ran out of time")  # handed in, no code
        zipped.writestr(f"obrienseán_{people[3]['id']}_814_attention-1.py", clean)  # Canvas renamed a resubmission
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(archive), "--roster", str(roster),
                           "--out", str(out), "--time-limit", "60"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "grades.csv", encoding="utf-8") as stream:
        graded = {row["submission"]: row["total"] for row in csv.DictReader(stream)}
    full = f"{TOTAL_POINTS:g}"
    assert graded == {f"doejane_{people[0]['id']}": full, f"nunezzoe_{people[1]['id']}": "0",
                      f"orstedase_{people[2]['id']}": "0", f"obrienseán_{people[3]['id']}": full}
    _, rows = read_csv(out / "canvas_grades.csv")
    assert rows[0] == [*CANVAS_HEADER, lms.ASSIGNMENT_TITLE] and rows[1][0] == "Points Possible"
    assert [row[5] for row in rows[2:]] == [full, "0", "0", full, ""]  # (a text file handed in: a zero, said)
    assert [row[1] for row in rows[2:]] == [p["id"] for p in people]
    assert (out / "moodle_grades.csv").is_file()


def test_gradescope_export_names_submissions_by_their_submitters(tmp_path, maxima, suite):
    export = tmp_path / "assignment_1234_export"
    (export / "submission_501").mkdir(parents=True)
    (export / "submission_502" / "work").mkdir(parents=True)
    (export / "submission_501" / "attention.py").write_text("x = 1\n")
    (export / "submission_502" / "work" / "attention.ipynb").write_text("{}")
    (export / lms_names.GRADESCOPE_METADATA).write_text(
        "submission_501:\n"
        "  :submitters:\n"
        "  - :name: Jane Doe\n    :sid: 'S0000'\n    :email: student0@example.edu\n"
        "  :created_at: 2024-03-01 10:00:00.000000000 -08:00\n  :score: 0.0\n"
        "submission_502:\n"
        "  :submitters:\n"
        "  - :name: Zoë Núñez\n    :sid: ''\n    :email: student1@example.edu\n"
        "  - :name: Åse Ørsted\n    :sid: 'S0002'\n    :email: student2@example.edu\n"
        "  :created_at: 2024-03-01 11:00:00.000000000 -08:00\n  :score: 0.0\n", encoding="utf-8")
    collected = collect(export)
    names = sorted(name for name, _ in collected.submissions)
    assert names == ["S0000", "student1_example.edu+S0002"]
    assert not collected.problems  # the metadata file is not reported as a stray file
    # A roster keyed by SIS id and email finds all three submitters; the others stay empty.
    people = class_of_30()[:4]
    roster = write_csv(tmp_path / "roster.csv", [["Name", "SID", "Email"],
                                                 *([p["name"], p["sis"], p["email"]] for p in people)])
    graded = [result("S0000", 70, suite), result("student1_example.edu+S0002", 55, suite)]
    lms.write_lms_files(tmp_path, graded, maxima, roster)
    _, rows = read_csv(tmp_path / "canvas_grades.csv")
    assert [row[5] for row in rows[2:]] == ["70", "55", "55", ""]
    _, rows = read_csv(tmp_path / "moodle_grades.csv")
    assert rows[0] == ["Full name", "Email address", lms.ASSIGNMENT_TITLE]
    assert [row[2] for row in rows[1:]] == ["70", "55", "55", ""]


def test_unknown_and_duplicate_submissions_are_reported_not_guessed(tmp_path, maxima, suite):
    people = class_of_30()[:3]
    roster = write_csv(tmp_path / "roster.csv", [["Student", "Username"], *([p["name"], p["login"]] for p in people)])
    graded = [result(f"{people[0]['login']}.py", 30, suite), result(f"{people[0]['login']}.ipynb", 80, suite),
              result("mallory", 100, suite)]
    # mallory may be a student whose row is empty: no file, rather than an import that skips or clears a grade
    with pytest.raises(lms.RosterError, match=r"1 graded submission\(s\) match no roster row \('mallory'\) while 2 "
                                              r"roster row\(s\) have no submission \(line 3 .*line 4 "):
        lms.write_lms_files(tmp_path, graded, maxima, roster)
    assert not any(tmp_path.glob("*_grades.csv"))
    # every row has its grade: mallory, whom the roster does not hold, is a note
    graded += [result(people[1]["login"], 60, suite), result(people[2]["login"], 50, suite)]
    notes = lms.write_lms_files(tmp_path, graded, maxima, roster)
    _, rows = read_csv(tmp_path / "moodle_grades.csv")
    assert [row[-1] for row in rows[1:]] == ["80", "60", "50"]
    assert any("mallory: matches no single student" in note for note in notes)
    assert any("two submissions" in note and "80" in note for note in notes)


def test_bad_roster_stops_before_grading(tmp_path, grader_cli):
    roster = write_csv(tmp_path / "roster.csv", [["colour", "size"], ["red", "L"]])
    done = grader_cli("grade", "solutions/attention.py", "--roster", roster, "--out", tmp_path / "out", cwd=ROOT)
    assert done.returncode == 2 and "no column names a student" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_roster_without_an_lms_identifier_gives_no_file_for_that_lms(tmp_path, maxima, suite):
    """Before: a roster of names and Moodle usernames also wrote canvas_grades.csv with its ID, SIS User ID and
    SIS Login ID columns all empty, a file Canvas cannot match to anyone. Now that file is not written (and an
    earlier one is removed), and a note says why."""
    roster = write_csv(tmp_path / "roster.csv", [["Name", "Username"], ["Jane Doe", "jdoe"], ["Zoe Nunez", "znunez"]])
    (tmp_path / "canvas_grades.csv").write_text("stale\n")
    notes = lms.write_lms_files(tmp_path, [result("jdoe", 70, suite), result("znunez", 55, suite)], maxima, roster)
    assert not (tmp_path / "canvas_grades.csv").exists()
    assert any(note.startswith("canvas_grades.csv not written") for note in notes)
    _, rows = read_csv(tmp_path / "moodle_grades.csv")
    assert [row[-1] for row in rows[1:]] == ["70", "55"]


def canvas_export(path, points_row, delimiter=","):
    """A Canvas gradebook export of 3 students, the kit's column `Attention exercises (4242)` beside a quiz;
    `points_row`: the Points Possible row's cells for the two columns, or None for an export without it."""
    rows = [[*CANVAS_HEADER, "Attention exercises (4242)", "Quiz 1 (777)"]]
    rows += [["    Points Possible", "", "", "", "", *points_row]] if points_row is not None else []
    rows += [[p["name"], p["id"], p["sis"], p["login"], "A", "", ""] for p in class_of_30()[:3]]
    with open(path, "w", newline="", encoding="utf-8-sig") as stream:
        csv.writer(stream, delimiter=delimiter).writerows(rows)
    return path


def test_canvas_scores_are_scaled_to_the_points_possible_of_the_exports_column(tmp_path, suite, maxima):
    """Before: a gradebook export whose `Attention exercises (4242)` is worth 50 points got a canvas_grades.csv
    with Points Possible 100 and scores out of 100, and no note: Canvas imports a cell as points of the existing
    assignment (it reads the Points Possible row only to create one), so 90 of 100 became 90 of 50. Now the
    scores are scaled to that column's Points Possible (50: 45), the file says 50, and a note says so; an export
    without a Points Possible row, or whose cell is no number, keeps the kit's total with a note saying so."""
    people = class_of_30()[:3]
    graded = [result(f"x_{people[0]['id']}", 90, suite), result(f"y_{people[1]['id']}", 75, suite)]
    for points_row, delimiter, written in ((["50.00", "10.00"], ",", "50"),
                                           (["50,00", "10,00"], ";", "50"),  # a decimal-comma locale's export
                                           (["200.00", "10.00"], ",", "200")):
        scores = [on_scale(90, float(written)), on_scale(75, float(written)), ""]
        roster = canvas_export(tmp_path / "export.csv", points_row, delimiter)
        notes = lms.write_lms_files(tmp_path, graded, maxima, roster)
        _, rows = read_csv(tmp_path / "canvas_grades.csv")
        assert rows[1] == ["Points Possible", "", "", "", "", written]
        assert [row[5] for row in rows[2:]] == scores
        assert [note for note in notes if note.startswith("canvas_grades.csv")] == [
            f"canvas_grades.csv: scores scaled from {TOTAL_POINTS:g} to {written}, the Points Possible of "
            f"'Attention exercises (4242)' in {roster} (Canvas imports each score as points of the existing "
            "assignment and keeps its Points Possible)"]
        _, moodle = read_csv(tmp_path / "moodle_grades.csv")  # Canvas's points are not Moodle's grade item's
        assert [row[-1] for row in moodle[1:]] == ["90", "75", ""]
    for points_row, said in ((None, "has no Points Possible row"), (["(read only)", "10.00"], "reads '(read only)'"),
                             (["", "10.00"], "reads ''"), (["0.00", "10.00"], "reads '0.00'")):
        roster = canvas_export(tmp_path / "export.csv", points_row)
        notes = lms.write_lms_files(tmp_path, graded, maxima, roster)
        _, rows = read_csv(tmp_path / "canvas_grades.csv")
        assert rows[1][5] == f"{TOTAL_POINTS:g}" and [row[5] for row in rows[2:]] == ["90", "75", ""]
        canvas_notes = [note for note in notes if note.startswith("canvas_grades.csv")]
        assert len(canvas_notes) == 1 and said in canvas_notes[0], (points_row, canvas_notes)
        assert f"scores out of the kit's {TOTAL_POINTS:g}" in canvas_notes[0]
    # The kit's own total in the export, or no column of the kit's (Canvas creates it, out of the total): no note.
    plain = write_csv(tmp_path / "plain.csv", [CANVAS_HEADER, *([p["name"], p["id"], "", "", ""] for p in people)])
    for roster in (canvas_export(tmp_path / "export.csv", [f"{TOTAL_POINTS:.2f}", "10.00"]), plain):
        notes = lms.write_lms_files(tmp_path, graded, maxima, roster)
        _, rows = read_csv(tmp_path / "canvas_grades.csv")
        assert rows[1][5] == f"{TOTAL_POINTS:g}" and [row[5] for row in rows[2:]] == ["90", "75", ""]
        assert not [note for note in notes if note.startswith("canvas_grades.csv")]


def on_scale(score, maximum):
    """`score` (of the kit's TOTAL_POINTS) on an LMS's `maximum`, written as the LMS files write it: 4 decimals,
    half up, in decimal (the scale to 12 significant digits, as 50 / 100 is written)."""
    scale = Decimal(f"{maximum / TOTAL_POINTS:.12g}")
    return f"{float((Decimal(repr(float(score))) * scale).quantize(Decimal('0.0001'), rounding=ROUND_HALF_UP)):.12g}"


WORKSHEET_HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                    "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"]


def test_moodle_grades_csv_is_on_the_worksheets_maximum_grade_as_the_worksheet_is(tmp_path, suite, maxima):
    """Before: with a grading worksheet whose Maximum Grade is 10, moodle_worksheet.csv held 9.525 but
    moodle_grades.csv 95.25, with no note for it: Moodle's gradebook CSV import refuses a file with a grade above
    the grade item's maximum (MDL-50650; older versions cap it). Now both files are on the worksheet's Maximum
    Grade and one note names both; a row whose Maximum Grade is no number keeps the kit's total, said in a note."""
    people = [("Ada Lovelace", "101", "10.00"), ("Alan Turing", "102", "10.00"), ("Grace Hopper", "103", "10,00"),
              ("Barbara Liskov", "104", "10.00")]

    def worksheet(maximum_of):
        return write_csv(tmp_path / "worksheet.csv", [WORKSHEET_HEADER] + [
            [f"Participant {number}", name, f"{number}@uni.edu", "Submitted for grading", "", maximum_of(maximum),
             "Yes", "-", "-", ""] for name, number, maximum in people])

    graded = [result("Ada_Lovelace_101", 100, suite), result("Alan_Turing_102", 95.25, suite),
              result("Grace_Hopper_103", 96.75, suite)]
    notes = lms.write_lms_files(tmp_path, graded, maxima, worksheet(lambda maximum: maximum))
    _, sheet = read_csv(tmp_path / "moodle_worksheet.csv")
    _, grades = read_csv(tmp_path / "moodle_grades.csv")
    on_ten = [on_scale(100, 10), on_scale(95.25, 10), on_scale(96.75, 10), ""]
    assert [row[4] for row in sheet[1:]] == on_ten
    assert grades[0] == ["Full name", "Email address", lms.ASSIGNMENT_TITLE]
    assert [row[-1] for row in grades[1:]] == on_ten
    assert f"moodle_worksheet.csv and moodle_grades.csv: scores scaled from {TOTAL_POINTS:g} to the assignment's " \
           "Maximum Grade 10 (Moodle skips, or refuses, a grade above the maximum)" in notes
    # The kit's total as Maximum Grade: the grades as they are, no note. A Maximum Grade that is no number: noted.
    notes = lms.write_lms_files(tmp_path, graded, maxima, worksheet(lambda maximum: f"{TOTAL_POINTS:.2f}"))
    assert [row[-1] for row in read_csv(tmp_path / "moodle_grades.csv")[1][1:]] == ["100", "95.25", "96.75", ""]
    assert not [note for note in notes if "Maximum Grade" in note]
    notes = lms.write_lms_files(tmp_path, graded, maxima, worksheet(lambda maximum: "Very good" if maximum == "10,00"
                                                                    else maximum))
    partly = [on_scale(100, 10), on_scale(95.25, 10), "96.75", ""]
    assert [row[4] for row in read_csv(tmp_path / "moodle_worksheet.csv")[1][1:]] == partly
    assert [row[-1] for row in read_csv(tmp_path / "moodle_grades.csv")[1][1:]] == partly
    assert any("the Maximum Grade of 1 worksheet row(s) is not a number (line 4 'Very good'): their scores are out "
               f"of the kit's {TOTAL_POINTS:g}" in note for note in notes), notes
    # Blind gradebook review: a maximum with grouped thousands ("1.000,00") was unread, and that row's grade went
    # out of the kit's total beside rows out of 20.
    notes = lms.write_lms_files(tmp_path, graded, maxima, worksheet(lambda maximum: "1.000,00" if maximum == "10,00"
                                                                    else maximum))
    assert [row[4] for row in read_csv(tmp_path / "moodle_worksheet.csv")[1][1:]][2] == on_scale(96.75, 1000)
    assert not [note for note in notes if "not a number" in note]


GROUPS = ("name,canvas_user_id,group_name\n"
          "\"Alpha, Ann\",7001,Team Alpha\n\"Alpha, Bob\",7002,Team Alpha\n\"Alpha, Carol\",7003,Team Alpha\n"
          "\"Beta, Dan\",7004,Team Beta\n\"Beta, Eve\",7005,Team Beta\n")


def canvas_origin(student, key):
    return {"lms": "canvas", "key": key, "student": student, "late": False, "original": "attention.py"}


def test_a_group_member_without_a_file_gets_the_groups_grade_not_a_teammates_own(suite):
    """A blind tester: Carol handed in a file of her own beside the group's; Bob (no file) got Carol's 100, not the
    group's 85 (the first member's result in the loop's order won). The group's is the file named after it."""
    roster = lms.read_roster_text(GROUPS, "groups.csv")
    group, own, beta = result("teamalpha_7001", 85, suite), result("carol_7003", 100, suite), result(
        "teambeta_7005", 100, suite)
    origins = {"teamalpha_7001": canvas_origin("teamalpha", "7001"), "carol_7003": canvas_origin("carol", "7003"),
               "teambeta_7005": canvas_origin("teambeta", "7005")}
    for order in ([group, own, beta], [own, group, beta]):
        chosen, _ = lms.match(roster, order, origins)
        names = {roster.students[position].name: kept.name for position, kept in chosen.items()}
        assert names == {"Alpha, Ann": "teamalpha_7001", "Alpha, Bob": "teamalpha_7001",
                         "Alpha, Carol": "carol_7003", "Beta, Dan": "teambeta_7005", "Beta, Eve": "teambeta_7005"}
    # Two members' own files and none of the group's: which one Bob shares is not known, and not guessed.
    ann = result("ann_7001", 90, suite)
    chosen, notes = lms.match(roster, [ann, own], {"ann_7001": canvas_origin("ann", "7001"),
                                                   "carol_7003": canvas_origin("carol", "7003")})
    assert "Alpha, Bob" not in {roster.students[position].name for position in chosen}
    assert any("group Team Alpha: 2 submissions" in note and "Alpha, Bob" in note for note in notes), notes


def test_a_roster_saved_as_excel_unicode_text_is_read_and_a_latin1_one_is_named(tmp_path):
    """A blind tester: Excel's "Unicode Text" (UTF-16, tab-separated) gave "'utf-8' codec can't decode byte 0xff"."""
    table = "name\tcanvas_user_id\tgroup_name\nNúñez, Zoë\t7001\tTeam Alpha\nØrsted, Åse\t7002\tTeam Alpha\n"
    saved = tmp_path / "roster.txt"
    saved.write_bytes(table.encode("utf-16"))  # with its BOM, as Excel writes it
    roster = lms.read_roster(saved)
    assert [(student.name, student.group) for student in roster.students] == [
        ("Núñez, Zoë", "Team Alpha"), ("Ørsted, Åse", "Team Alpha")]
    latin = tmp_path / "latin.csv"
    latin.write_bytes("name,canvas_user_id\nNúñez, Zoë,7001\n".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8 text .line 2 holds bytes.* save it as CSV UTF-8"):
        lms.read_roster(latin)  # the line, not a byte offset alone, that read like a byte's value


def test_two_columns_that_could_be_the_assignment_fill_neither_and_say_so(tmp_path, suite, maxima):
    """A blind tester: with `Attention exercises (4242)` and `Attention exercises (5555)` in the export, a new
    unscaled column was written without a word (every other roster fallback prints a note)."""
    rows = [[*CANVAS_HEADER, "Attention exercises (4242)", "Attention exercises (5555)"],
            ["    Points Possible", "", "", "", "", "50.00", "50.00"]]
    rows += [[p["name"], p["id"], p["sis"], p["login"], "Section A", "", ""] for p in class_of_30()[:3]]
    roster = write_csv(tmp_path / "export.csv", rows)
    results = [result(f"s{i}", 80, suite) for i in range(3)]
    origins = {f"s{i}": {"lms": "canvas", "key": p["id"], "student": f"s{i}", "late": False, "original": "a.py"}
               for i, p in enumerate(class_of_30()[:3])}
    notes = lms.write_lms_files(tmp_path, results, maxima, roster_path=roster, origins=origins)
    assert any("2 columns that could be this assignment" in note and "(4242)" in note and "(5555)" in note
               for note in notes), notes


def test_a_worksheet_grade_held_without_a_submission_is_kept_and_locked_rows_are_said(tmp_path, suite, maxima):
    """Blind gradebook review (round 2): Barbara, without a submission, had 18.00 on the worksheet, and
    moodle_grades.csv gave her an empty cell (Moodle's CSV import clears the grade); Grace's row said "Grade can be
    changed: No" and nothing said Moodle would keep her old grade."""
    rows = [["Participant 101", "Ada Lovelace", "101@uni.edu", "Submitted", "", "100,00", "Yes", "-", "-", ""],
            ["Participant 103", "Grace Hopper", "103@uni.edu", "Submitted", "12,00", "100,00", "No", "-", "-", ""],
            ["Participant 104", "Barbara Liskov", "104@uni.edu", "No submission", "18,00", "100,00", "Yes", "-", "-",
             ""]]
    worksheet = write_csv(tmp_path / "worksheet.csv", [WORKSHEET_HEADER, *rows])
    graded = [result("Ada_Lovelace_101", 100, suite), result("Grace_Hopper_103", 95.25, suite)]
    notes = lms.write_lms_files(tmp_path, graded, maxima, worksheet)
    _, grades = read_csv(tmp_path / "moodle_grades.csv")
    assert [row[-1] for row in grades[1:]] == [on_scale(100, 100), on_scale(95.25, 100), "18"]
    assert [row[4] for row in read_csv(tmp_path / "moodle_worksheet.csv")[1][1:]][2] == "18,00"  # as downloaded
    assert any("1 worksheet row(s) say the grade cannot be changed (Grace Hopper)" in note for note in notes), notes
    assert any("keep the grade their worksheet row holds (Barbara Liskov)" in note for note in notes), notes


def test_a_students_own_submission_counts_before_their_groups(tmp_path, suite, maxima):
    """Blind gradebook review (round 2): Ada, in the Gradescope group 5001+5002 (83.75) and alone as 5001 (79.75),
    got the group's grade as "the better" one, though a group's grade goes only to members without their own."""
    roster = write_csv(tmp_path / "roster.csv", [["Name", "SID"], ["Ada Lovelace", "5001"], ["Alan Turing", "5002"]])
    graded = [result("5001+5002", 83.75, suite), result("5001", 79.75, suite)]
    notes = lms.write_lms_files(tmp_path, graded, maxima, roster)
    assert [row[-1] for row in read_csv(tmp_path / "canvas_grades.csv")[1][2:]] == ["79.75", "83.75"]
    assert any("the LMS files get 5001's 79.75 (their own)" in note for note in notes), notes
    from grader.feedback import class_view

    record = {"students": lms.roster_record(lms.read_roster(roster), graded)}
    assert class_view.who("5001+5002", record)[0] == "Alan Turing"  # Ada's grade is her own file's
    record = {"students": lms.roster_record(lms.read_roster(roster), graded[:1])}
    assert class_view.who("5001+5002", record)[0] == "Ada Lovelace, Alan Turing"


def test_a_canvas_groups_export_gives_its_sis_ids(tmp_path, suite, maxima):
    """Blind gradebook review (round 2): Canvas's groups export holds the SIS id in `user_id` (beside
    `canvas_user_id`); canvas_grades.csv left "SIS User ID" empty."""
    export = tmp_path / "groups.csv"
    export.write_text("name,canvas_user_id,user_id,login_id,sections,group_name,canvas_group_id,group_id\n"
                      "\"Alpha, Ann\",7001,s1,ann,A,Team Alpha,1,\n\"Alpha, Bob\",7002,s2,bob,A,Team Alpha,1,\n",
                      encoding="utf-8")
    lms.write_lms_files(tmp_path, [result("alphaann_7001", 90, suite), result("alphabob_7002", 80, suite)], maxima,
                        export)
    rows = read_csv(tmp_path / "canvas_grades.csv")[1][2:]
    assert [row[1:4] for row in rows] == [["7001", "s1", "ann"], ["7002", "s2", "bob"]]
    assert [row[-1] for row in rows] == ["90", "80"]


def test_a_file_the_grader_failed_on_gets_an_empty_cell_not_a_zero(tmp_path, suite, maxima):
    """Blind review (round 3): ENGINE=otter failed on a file (exit 2, "not a verdict on your code"), and the
    Canvas and Moodle files still gave that student 0: an import would have recorded it."""
    roster = write_csv(tmp_path / "roster.csv", [["Name", "Email"], ["Ada", "ada@x.edu"], ["Alan", "alan@x.edu"]])
    graded = [result("ada@x.edu", 90, suite), result("alan@x.edu", 0, suite)]
    notes = lms.write_lms_files(tmp_path, graded, maxima, roster, no_verdict=["alan@x.edu"])
    assert [row[-1] for row in read_csv(tmp_path / "moodle_grades.csv")[1][1:]] == ["90", ""]
    assert any("alan@x.edu: the grader failed on their file(s)" in note for note in notes), notes


@pytest.mark.parametrize("marker", ["    Muted", "Manual Posting"])
def test_a_canvas_exports_marker_row_is_no_student(tmp_path, marker):
    """Blind gradebook review (round 5): an older Canvas export's `Muted` row (under the header, beside Points
    Possible) was read as a student: "did not submit: Muted", and a phantom row in both LMS files."""
    rows = [[*CANVAS_HEADER, "Attention exercises (4242)"],
            ["    Points Possible", "", "", "", "", f"{TOTAL_POINTS:.2f}"],
            [marker, "", "", "", "", marker.strip()]]
    rows += [[p["name"], p["id"], p["sis"], p["login"], "Section A", ""] for p in class_of_30()[:3]]
    roster = lms.read_roster(write_csv(tmp_path / "export.csv", rows))
    assert [student.name for student in roster.students] == [p["name"] for p in class_of_30()[:3]]


def test_identifiers_reach_the_lms_files_as_the_export_wrote_them(tmp_path, suite, maxima):
    """Blind gradebook review (round 6): the formula guard wrote SIS ids `'@00123456` (a Banner id's form): no
    import matches a student by it. A plain id is written as the export gave it; a name, or an id that could run
    as a formula (`=...`), is still guarded."""
    rows = [[*CANVAS_HEADER, "Attention exercises (4242)"],
            ["=HYPERLINK(\"x\") Eve", "5001", "@00123456", "=login5004", "Section A", ""],
            ["Bob B", "5002", "+4477", "bob", "Section A", ""]]
    roster = write_csv(tmp_path / "export.csv", rows)
    graded = [result("eve_5001", 80, suite), result("bob_5002", 90, suite)]
    lms.write_lms_files(tmp_path, graded, maxima, roster)
    _, canvas = read_csv(tmp_path / "canvas_grades.csv")
    assert canvas[2][:4] == ["'=HYPERLINK(\"x\") Eve", "5001", "@00123456", "'=login5004"], canvas[2]
    assert canvas[3][2:4] == ["+4477", "bob"]  # (an id that starts with = could run: it stays guarded)
    _, moodle = read_csv(tmp_path / "moodle_grades.csv")
    assert ["'=HYPERLINK(\"x\") Eve", "'=login5004"] == moodle[1][:2] and moodle[2][:2] == ["Bob B", "bob"], moodle


def test_scaled_scores_round_half_up_in_decimal():
    """Blind gradebook review (round 7): 26.55675 became 26.5567 and 6.28125 6.2812, but 5.98125 5.9813: the float
    product cut at 4 places. Scaled in decimal, half up."""
    from types import SimpleNamespace

    from grader.integrations.lms import _score

    cases = {53.1135: "26.5568", 11.9625: "5.9813", 12.5625: "6.2813", 79.75: "39.875", 100.0: "50"}
    assert {score: _score(SimpleNamespace(name="x", score=score), None, 50 / 100) for score in cases} == cases
    assert _score(SimpleNamespace(name="x", score=100.0), None, 33.3 / 100) == "33.3"
