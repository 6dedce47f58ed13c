"""The instructor's term through the real CLI and `make`: the same class downloaded from Canvas and from
Moodle grades alike with names and late flags right; overrides and a regrade show up in grades.csv,
the LMS files and the report with their reason; the report's per-student table agrees with grades.csv
and the terminal summary; every documented make knob reaches the grader and a misspelt one stops make.
"""

import csv
import html
import re
import shutil
import struct
import subprocess
import sys
import zipfile

import pytest

from grader.chapter import STEP_KEYS, TOTAL_POINTS
from grader.cohort.submissions import member_name
from grader.faults.bugs import BUGS
from grader.paths import ROOT
from grader.text import safe_name
from tests.kit.project import kit_project, shell_env

BUGGY = {bug.id: bug for bug in BUGS}
# One class: display name, Canvas "lastfirst", Canvas user id, Moodle participant, email, what they hand in.
PEOPLE = [
    ("Jane Doe", "Doe, Jane", "doejane", "5000", "700100", "jane@example.edu", "clean"),
    ("Zoë Núñez", "Núñez, Zoë", "núñezzoë", "5001", "700101", "zoe@example.edu", "masking_not_renormalised"),
    ("Seán O'Brien", "O'Brien, Seán", "obrienseán", "5002", "700102", "sean@example.edu", "stub"),
    ("Åse Ørsted", "Ørsted, Åse", "ørstedåse", "5003", "700103", "ase@example.edu", "clean"),
    ("Ana Ausente", "Ausente, Ana", "ausenteana", "5004", "700104", "ana@example.edu", None),
]
LATE = {"5001"}  # Zoë submitted late


def cli(*args, cwd=ROOT, timeout=600):
    return subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def source_of(kind, clean, stub):
    return {"clean": clean, "stub": stub}.get(kind) or BUGGY[kind].apply(clean)


def without_utf8_flag(path):
    """Clear the UTF-8 flag of every name in a zip, as rubyzip (Canvas's zip writer) leaves it."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zipped:
        for info in zipped.infolist():
            data[info.header_offset + 7] &= ~0x08  # bit 11 of the local header's flags (its high byte)
    end = data.rindex(b"PK\x05\x06")
    count, offset = struct.unpack_from("<H", data, end + 10)[0], struct.unpack_from("<I", data, end + 16)[0]
    for _ in range(count):
        data[offset + 9] &= ~0x08  # the central directory's copy of the flags
        names, extra, comment = struct.unpack_from("<HHH", data, offset + 28)
        offset += 46 + names + extra + comment
    path.write_bytes(bytes(data))


def canvas_download(folder, clean, stub):
    """Canvas's "Download Submissions" zip, names as canvas-lms writes them, and its gradebook export."""
    archive = folder / "canvas_submissions.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for _, _, slug, user, _, _, kind in PEOPLE:
            late = "_LATE" if user in LATE else ""
            if kind == "stub":  # resubmitted: Canvas renamed the new file, the old one is not in the download
                zipped.writestr(f"{slug}{late}_{user}_9{user}_attention-1.py", source_of(kind, clean, stub))
            elif kind:
                zipped.writestr(f"{slug}{late}_{user}_9{user}_attention.py", source_of(kind, clean, stub))
        zipped.writestr("ausenteana_5004_text.html", "<p>I will send it by email</p>")  # an online text entry
    without_utf8_flag(archive)
    roster = folder / "canvas_gradebook.csv"
    with open(roster, "w", newline="", encoding="utf-8-sig") as stream:
        writer = csv.writer(stream)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention exercises (4242)"])
        writer.writerow(["    Points Possible", "", "", "", "", "100.00"])
        for _, sortable, _, user, _, email, _ in PEOPLE:
            writer.writerow([sortable, user, f"S{user}", email.split("@")[0], "Section A", ""])
    return archive, roster


WORKSHEET = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade", "Grade can be changed",
             "Last modified (submission)", "Last modified (grade)", "Feedback comments"]


def moodle_download(folder, clean, stub):
    """Moodle's "Download all submissions" zip (one folder per student) and its grading worksheet."""
    archive = folder / "moodle_submissions.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name, _, _, _, participant, _, kind in PEOPLE:
            if kind:
                zipped.writestr(f"{name}_{participant}_assignsubmission_file/attention.py", source_of(kind, clean, stub))
            else:
                zipped.writestr(f"{name}_{participant}_assignsubmission_onlinetext/onlinetext.html", "<p>later</p>")
    without_utf8_flag(archive)
    worksheet = folder / "moodle_worksheet.csv"
    with open(worksheet, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(WORKSHEET)
        for name, _, _, user, participant, email, kind in PEOPLE:
            status = "No submission" if not kind else "Submitted for grading" + (
                " Assignment was submitted 1 day 2 hours late" if user in LATE else "")
            writer.writerow([f"Participant {participant}", name, email, status, "", "100.00", "Yes",
                             "Monday, 4 March 2024, 10:00 AM" if kind else "-", "-", ""])
    return archive, worksheet


def rows_of(path):
    with open(path, newline="", encoding="utf-8-sig") as stream:
        return list(csv.reader(stream))


def grades_of(out):
    with open(out / "grades.csv", newline="", encoding="utf-8") as stream:
        return {row["submission"]: row for row in csv.DictReader(stream)}


@pytest.fixture(scope="module")
def downloads(tmp_path_factory, clean, stub):
    folder = tmp_path_factory.mktemp("lms")
    return canvas_download(folder, clean, stub), moodle_download(folder, clean, stub), folder


@pytest.fixture(scope="module")
def canvas_out(downloads):
    (archive, roster), _, folder = downloads
    out = folder / "canvas_out"
    done = cli("grade", archive, "--roster", roster, "--out", out, "--time-limit", "60")
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done


@pytest.fixture(scope="module")
def moodle_out(downloads):
    _, (archive, worksheet), folder = downloads
    out = folder / "moodle_out"
    done = cli("grade", archive, "--roster", worksheet, "--out", out, "--time-limit", "60")
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done


def test_canvas_names_late_flags_and_resubmissions(canvas_out):
    out, done = canvas_out
    grades = grades_of(out)
    assert sorted(grades) == ["doejane_5000", "núñezzoë_5001", "obrienseán_5002", "ørstedåse_5003"]  # UTF-8 decoded
    assert {name: row["late"] for name, row in grades.items()} == {
        "doejane_5000": "no", "núñezzoë_5001": "yes", "obrienseán_5002": "no", "ørstedåse_5003": "no"}
    assert float(grades["obrienseán_5002"]["total"]) < TOTAL_POINTS / 2  # the resubmitted file (the stub) was graded
    assert "online text or URL entry, ignored" in done.stderr
    rows = rows_of(out / "canvas_grades.csv")
    assert rows[0][-1] == "Attention exercises (4242)" and rows[1][0] == "Points Possible"
    assert [row[1] for row in rows[2:]] == [p[3] for p in PEOPLE]
    assert [row[-1] for row in rows[2:]] == [grades[f"{p[2]}_{p[3]}"]["total"] if p[6] else "" for p in PEOPLE]


def test_canvas_and_moodle_downloads_of_one_class_give_the_same_grades(canvas_out, moodle_out):
    canvas, moodle = grades_of(canvas_out[0]), grades_of(moodle_out[0])
    assert sorted(moodle) == sorted(safe_name(f"{p[0]}_{p[4]}") for p in PEOPLE if p[6])
    for person in PEOPLE:
        if person[6]:
            in_canvas, in_moodle = canvas[f"{person[2]}_{person[3]}"], moodle[safe_name(f"{person[0]}_{person[4]}")]
            assert [in_canvas[key] for key in (*STEP_KEYS, "total", "late")] == \
                [in_moodle[key] for key in (*STEP_KEYS, "total", "late")], person[0]
    assert "Moodle onlinetext of Ana Ausente ignored" in moodle_out[1].stderr


def test_moodle_worksheet_comes_back_with_grades_and_empty_cells_for_no_submission(moodle_out):
    out, _ = moodle_out
    rows = rows_of(out / "moodle_worksheet.csv")
    assert rows[0] == WORKSHEET
    grades = grades_of(out)
    expected = [grades[safe_name(f"{p[0]}_{p[4]}")]["total"] if p[6] else "" for p in PEOPLE]
    assert [row[4] for row in rows[1:]] == expected  # Moodle skips an empty Grade: Ana keeps what she has
    assert [row[0] for row in rows[1:]] == [f"Participant {p[4]}" for p in PEOPLE]
    assert all(row[8] == "-" for row in rows[1:])  # "Last modified (grade)" kept as downloaded


def test_the_report_names_students_and_who_did_not_submit(canvas_out, moodle_out):
    for out, names in ((canvas_out[0], [p[1] for p in PEOPLE]), (moodle_out[0], [p[0] for p in PEOPLE])):
        page = html.unescape((out / "report.html").read_text(encoding="utf-8"))
        for name in names[:4]:
            assert name in page
        missing = re.search(r"Did not submit \((\d+)\)</h2><p>(.*?)</p>", page, re.S)
        assert missing and missing[1] == "1" and names[4] in missing[2]


def student_table(out):
    """{submission: total} from the report's per-student table."""
    page = (out / "report.html").read_text(encoding="utf-8")
    table = re.search(r"<table class='students'>(.*?)</table>", page, re.S).group(1)
    totals = {}
    for row in re.findall(r"<tr><td>.*?</tr>", table, re.S):
        cells = re.findall(r"<td>(.*?)</td>", row, re.S)
        name = html.unescape(re.sub(r"<[^>]+>", "", cells[2]))
        totals[name] = float(re.sub(r"<[^>]+>|\*", "", cells[3]))
    return totals


def test_the_report_table_agrees_with_grades_csv_and_the_summary(canvas_out):
    out, done = canvas_out
    table = student_table(out)
    grades = grades_of(out)
    assert table == {name: float(row["total"]) for name, row in grades.items()}
    totals = sorted(table.values())
    summary = re.search(r"cohort: (\d+) submissions, mean ([\d.]+), median ([\d.]+) of ([\d.]+); (\d+) full marks, "
                        r"(\d+) zero", done.stdout)
    assert int(summary[1]) == len(totals)
    assert float(summary[2]) == pytest.approx(sum(totals) / len(totals), abs=0.05)
    assert int(summary[5]) == sum(total >= TOTAL_POINTS for total in totals)
    assert int(summary[6]) == sum(total == 0 for total in totals)
    assert "did not submit: 1 (Ausente, Ana)" in done.stdout
    page = (out / "report.html").read_text(encoding="utf-8")
    in_report = re.search(r"(\d+) mistake\(s\) recognised in (\d+) submission\(s\)", page)
    in_summary = re.search(r"(\d+) mistake\(s\) recognised in (\d+) submission\(s\)", done.stdout)
    assert in_report and in_summary and in_report.groups() == in_summary.groups()


def test_overrides_and_a_regrade_show_up_everywhere_with_their_reason(canvas_out, downloads, tmp_path, clean):
    out = tmp_path / "out"
    shutil.copytree(canvas_out[0], out)
    (archive, roster), _, _ = downloads
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("student,step,points,reason\n"
                         "5001,total,80,\"medical extension, graded by hand\"\n"
                         "doejane_5000,masking,12,=HYPERLINK(\"http://x\")\n", encoding="utf-8")
    done = cli("grade", archive, "--out", out, "--overrides", overrides, "--time-limit", "60")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resuming: 4 of 4 already graded and unchanged" in done.stderr
    grades = grades_of(out)
    assert grades["núñezzoë_5001"]["total"] == "80"
    assert grades["núñezzoë_5001"]["override"] == "total set to 80 (medical extension, graded by hand)"
    assert grades["doejane_5000"]["masking"] == "12" and grades["doejane_5000"]["total"] == f"{TOTAL_POINTS - 3:g}"
    assert grades["doejane_5000"]["override"].startswith("masking set to 12 (")
    assert not any(cell.startswith(("=", "+", "@")) for row in rows_of(out / "grades.csv") for cell in row)
    canvas = {row[1]: row[-1] for row in rows_of(out / "canvas_grades.csv")[2:]}  # the roster was kept
    assert canvas["5001"] == "80" and canvas["5000"] == f"{TOTAL_POINTS - 3:g}"
    page = html.unescape((out / "report.html").read_text(encoding="utf-8"))
    assert "medical extension, graded by hand" in page and 'HYPERLINK("http://x")' in page
    assert "overrides: 2 (" in done.stdout

    # A regrade through make, from a file the student sent later: only that student's files and the
    # class files change, and the overrides still apply.
    fixed = tmp_path / "fixed.py"
    fixed.write_text(clean)
    before = {path.relative_to(out): path.stat().st_mtime_ns for path in out.rglob("*") if path.is_file()}
    project = kit_project(tmp_path / "kit")
    done = subprocess.run(["make", "regrade", "STUDENT=5002", f"SUBMISSION={fixed}", f"OUT={out}", "TIME_LIMIT=60"],
                          cwd=project, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    after = {path.relative_to(out): path.stat().st_mtime_ns for path in out.rglob("*") if path.is_file()}
    assert set(after) == set(before), "a regrade must not leave stray files"
    changed = {str(path) for path in after if after[path] != before[path] and not path.name.startswith(".")}  # (lock)
    assert changed <= {"results/obrienseán_5002.json", "feedback/obrienseán_5002.html", "grades.csv", "class.json",
                       "canvas_grades.csv", "moodle_grades.csv", "report.html", "integrity.html", "integrity.csv",
                       *(f"report/{p.name}" for p in
                                                                                   (out / "report").iterdir())}
    assert "results/obrienseán_5002.json" in changed and "results/doejane_5000.json" not in changed
    grades = grades_of(out)
    assert grades["obrienseán_5002"]["total"] == f"{TOTAL_POINTS:g}" and grades["núñezzoë_5001"]["total"] == "80"
    assert {row[1]: row[-1] for row in rows_of(out / "canvas_grades.csv")[2:]}["5002"] == f"{TOTAL_POINTS:g}"
    assert student_table(out)["obrienseán_5002"] == TOTAL_POINTS


def test_a_lone_file_is_not_graded_into_a_class_out(canvas_out, tmp_path, clean):
    out = tmp_path / "out"
    shutil.copytree(canvas_out[0], out)
    before = sorted(path for path in out.rglob("*"))
    lone = tmp_path / "alice.py"
    lone.write_text(clean)
    done = cli("grade", lone, "--out", out)
    assert done.returncode == 2 and "holds a graded class" in done.stderr and "make regrade" in done.stderr
    assert sorted(path for path in out.rglob("*")) == before


def test_zip_names_are_decoded_with_the_right_code_page():
    name = "ørstedåse_5003_1_attention.py"
    unflagged = zipfile.ZipInfo(name.encode("utf-8").decode("cp437"))
    assert member_name(unflagged) == (name, False)  # UTF-8 bytes without the flag (rubyzip, many tools)
    legacy = zipfile.ZipInfo(name.encode("cp850").decode("cp437"))
    assert member_name(legacy, "cp850") == (name, True)  # Windows' zip in Western Europe
    assert member_name(legacy)[1] is True  # read as cp437, and reported as a guess
    raw = name.encode("cp850")
    import zlib

    utf8 = name.encode("utf-8")
    legacy.extra = struct.pack("<HHBI", 0x7075, 5 + len(utf8), 1, zlib.crc32(raw)) + utf8
    assert member_name(legacy) == (name, False)  # Info-ZIP's Unicode Path field wins


MAKE_KNOBS = {"TIME_LIMIT=7": "--time-limit 7", "MEMORY_LIMIT=1GiB": "--memory-limit 1GiB", "JOBS=3": "--jobs 3",
              "DEVICE=cuda": "--device cuda", "SHARD=2/4": "--shard 2/4", "ROSTER=r.csv": "--roster r.csv",
              "OVERRIDES=o.csv": "--overrides o.csv", "SUBMISSION_TIME_LIMIT=90": "--submission-time-limit 90",
              "ZIP_ENCODING=cp850": "--zip-encoding cp850", "ENGINE=otter": "--engine otter",
              "RESULTS=r.json": "--results r.json", "OUT=elsewhere": "--out elsewhere"}


def make_dry(project, *args):
    return subprocess.run(["make", "-n", *args], cwd=project, capture_output=True, text=True, timeout=60,
                          env=shell_env())


def test_every_make_knob_reaches_the_grader_and_a_typo_stops_make(tmp_path):
    import shlex

    def said(done):  # the dry run's last command, as the shell will split it (paths are quoted: spaces, parentheses)
        return shlex.split(done.stdout.strip().splitlines()[-1])

    project = kit_project(tmp_path / "kit")
    done = make_dry(project, "grade", *MAKE_KNOBS)
    assert done.returncode == 0, done.stderr
    command = " ".join(said(done))
    for knob, flag in MAKE_KNOBS.items():
        assert flag in command, knob
    regrade = " ".join(said(make_dry(project, "regrade", "STUDENT=alice", "SUBMISSION=a.py", "TIME_LIMIT=7",
                                     "OVERRIDES=o.csv")))
    assert "-m grader regrade alice" in regrade and "--submission a.py" in regrade
    # A roster name with a space stays one argument (a blind tester: "unrecognized arguments: John").
    named = said(make_dry(project, "regrade", "STUDENT=Smith, John"))
    assert named[3:5] == ["regrade", "Smith, John"], named
    assert "--time-limit 7" in regrade and "--overrides o.csv" in regrade
    publish = " ".join(said(make_dry(project, "publish", "PARTS=nbgrader", "COURSE_ID=ml101", "DIST=d")))
    assert "publish --dist d nbgrader --course-id ml101" in publish
    merge = " ".join(said(make_dry(project, "merge", "SHARDS=a b", "OVERRIDES=o.csv", "ROSTER=r.csv")))
    assert "merge a b" in merge and "--overrides o.csv" in merge
    bench = make_dry(project, "bench", "COUNT=20", "JOBS=2")
    assert "--count 20" in bench.stdout and "--jobs 2" in bench.stdout
    typo = make_dry(project, "grade", "TIME_LMIT=5")
    assert typo.returncode != 0 and "unknown variable(s) TIME_LMIT" in typo.stderr
    missing = make_dry(project, "regrade")
    assert missing.returncode != 0 and "needs STUDENT=" in missing.stderr


def test_knobs_come_from_the_command_line_only_and_make_clean_removes_only_a_grading_out(tmp_path):
    project = kit_project(tmp_path / "kit")
    inherited = subprocess.run(["make", "-n", "grade"], cwd=project, capture_output=True, text=True, timeout=60,
                               env=shell_env(OUT="/home", SUBMISSION="elsewhere.py", DEVICE="cuda"))
    line = __import__("shlex").split(inherited.stdout.strip().splitlines()[-1])
    assert line[3:6] == ["grade", "--out", "out"] and "cuda" not in line and "elsewhere.py" not in line, line
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    refused = subprocess.run(["make", "clean", f"OUT={precious}"], cwd=project, capture_output=True, text=True,
                             timeout=60, env=shell_env())
    assert refused.returncode != 0 and "not a grading OUT" in refused.stderr
    assert (precious / "thesis.tex").exists()
    graded = tmp_path / "graded"
    (graded / "results").mkdir(parents=True)
    done = subprocess.run(["make", "clean", f"OUT={graded}"], cwd=project, capture_output=True, text=True,
                          timeout=60, env=shell_env())
    assert done.returncode == 0 and not graded.exists(), done.stderr
    # Blind gradebook review (round 6): an nbgrader course holding its own export's grades.csv, and a publish
    # folder graded into, were removed whole (gradebook.db with them).
    for folder, kept in (("course", ("grades.csv", "nbgrader_config.py", "gradebook.db")),
                         ("dist copy", ("student.zip", "results.json"))):
        course = tmp_path / folder
        course.mkdir()
        for name in kept:
            (course / name).write_text("kept")
        refused = subprocess.run(["make", "clean", f"OUT={course}"], cwd=project, capture_output=True, text=True,
                                 timeout=60, env=shell_env())
        assert refused.returncode != 0 and all((course / name).exists() for name in kept), refused.stderr


def test_overrides_that_cannot_apply_are_refused_before_grading(tmp_path, grader_cli):
    bad = tmp_path / "overrides.csv"
    for text, message in (("student,step,points,reason\nx,attention,3,why\n", "neither 'total' nor"),
                          ("student,step,points,reason\nx,masking,99,why\n", "outside 0.."),
                          ("student,step,points,reason\nx,masking,3,\n", "give a reason"),
                          ("name,points\nx,3\n", "no 'step' column")):
        bad.write_text(text)
        done = grader_cli("grade", "solutions/attention.py", "--overrides", bad, "--out", tmp_path / "out", cwd=ROOT)
        assert done.returncode == 2 and message in done.stderr, (text, done.stderr)
    assert not (tmp_path / "out").exists()


def test_the_csv_writers_agree_on_final_scores(canvas_out):
    """grades.csv and canvas_grades.csv read from the same final scores (class.json)."""
    out, _ = canvas_out
    grades = grades_of(out)
    canvas = rows_of(out / "canvas_grades.csv")
    by_user = {row[1]: row[-1] for row in canvas[2:]}
    for name, row in grades.items():
        assert by_user[name.rsplit("_", 1)[1]] == row["total"]


def test_a_group_grade_reaches_every_member_without_a_submission_of_their_own(tmp_path, suite, maxima):
    from grader.integrations import lms
    from grader.judging.model import SubmissionResult
    from grader.judging.model import TestResult as Verdict

    def result(name, score):
        tests, left = [], score
        for test in suite:
            earned = min(test.points, left)
            left -= earned
            tests.append(Verdict(test.name, test.step, earned, test.points, "", test.visibility))
        return SubmissionResult(name, f"{name}.py", tests)

    roster = tmp_path / "groups.csv"  # Canvas's groups export (People > Groups > Export)
    roster.write_text("name,canvas_user_id,user_id,login_id,sections,group_name,canvas_group_id,group_id\n"
                      "Jane Doe,5000,S5000,jdoe,A,Team Red,11,\nZoë Núñez,5001,S5001,znunez,A,Team Red,11,\n"
                      "Seán O'Brien,5002,S5002,sobrien,A,Team Blue,12,\nÅse Ørsted,5003,S5003,aorsted,A,Team Blue,12,\n",
                      encoding="utf-8")
    # Canvas names a group's files after the group and one member (the representative).
    graded = [result("teamred_5000", 70), result("teamblue_5003", 55), result("obrienseán_5002", 90)]
    origins = {"teamred_5000": {"lms": "canvas", "key": "5000", "student": "teamred"},
               "teamblue_5003": {"lms": "canvas", "key": "5003", "student": "teamblue"},
               "obrienseán_5002": {"lms": "canvas", "key": "5002", "student": "obrienseán"}}
    lms.write_lms_files(tmp_path, graded, maxima, roster, origins=origins)
    assert [row[-1] for row in rows_of(tmp_path / "canvas_grades.csv")[2:]] == ["70", "70", "90", "55"]
    # Moodle names a team submission's folder after the team.
    moodle = {"Team_Red_31": {"lms": "moodle", "key": "31", "student": "Team Red"}}
    lms.write_lms_files(tmp_path, [result("Team_Red_31", 64)], maxima, roster, origins=moodle)
    assert [row[-1] for row in rows_of(tmp_path / "canvas_grades.csv")[2:]] == ["64", "64", "", ""]
