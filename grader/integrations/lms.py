"""Grades out to learning-management systems: Canvas and Moodle gradebook imports.

(Who a downloaded submission belongs to is read in `grader.classes.lms_names`.)
Beside grades.csv, `canvas_grades.csv` (Canvas gradebook import) and
`moodle_grades.csv` (Moodle grade import), one row per roster student. A
student without a submission gets an empty cell, never a zero: both systems
leave an empty cell's grade alone. Files are UTF-8 CSV, quoted where needed,
so "Doe, Jane" and "Zoë Núñez" arrive intact.
"""

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.outfiles import write_atomic
from grader.text import safe_name

ASSIGNMENT_TITLE = "Attention exercises"  # a new Canvas/Moodle column when the roster names none
CANVAS_ASSIGNMENT = re.compile(r"^(?P<title>.+?)\s*\((?P<id>\d+)\)$")

# Roster column names, as Canvas, Moodle, Gradescope and hand-made rosters spell them (lower case).
COLUMNS = {
    "name": ("student", "name", "full name", "student name"),
    "first": ("first name", "first_name", "firstname", "given name"),
    "last": ("last name", "last_name", "lastname", "surname", "family name"),
    "canvas_id": ("id", "canvas id", "canvas user id", "user id", "user_id"),
    "sis_user_id": ("sis user id", "sis_user_id", "sid", "student id", "student_id"),
    "sis_login_id": ("sis login id", "sis_login_id", "login id", "login"),
    "section": ("section", "sections"),
    "email": ("email", "email address", "e-mail", "e-mail address"),
    "username": ("username", "user name"),
    "idnumber": ("id number", "idnumber", "id_number"),
}
IDENTIFIERS = ("canvas_id", "sis_user_id", "sis_login_id", "email", "username", "idnumber")


# -- the roster -----------------------------------------------------------------------------------
@dataclass
class RosterStudent:
    name: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    email: str = ""
    username: str = ""
    idnumber: str = ""

    def identifiers(self):
        return [value for value in (getattr(self, key) for key in IDENTIFIERS) if value]


@dataclass
class Roster:
    students: list = field(default_factory=list)
    canvas_column: str = ASSIGNMENT_TITLE  # `Title (assignment_id)` when the roster names it
    moodle_column: str = ASSIGNMENT_TITLE


def _normal(header):
    return " ".join((header or "").replace("\ufeff", "").strip().lower().split())


def read_roster(path):
    """Students from a CSV: a Canvas gradebook export, a Moodle or Gradescope roster, or a plain list."""
    text = Path(path).read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise ValueError(f"{path}: the roster is empty")
    header = [_normal(cell) for cell in rows[0]]
    where = {}
    for key, names in COLUMNS.items():
        for index, cell in enumerate(header):
            if cell in names and key not in where:
                where[key] = index
    if not any(key in where for key in IDENTIFIERS) and "name" not in where:
        raise ValueError(f"{path}: no column names a student (expected e.g. Student, ID, Email, Username)")
    roster = Roster()
    kit_columns = [cell.strip() for cell in rows[0] if CANVAS_ASSIGNMENT.match(cell.strip())
                   and "attention" in cell.lower()]
    if len(kit_columns) == 1:  # the Canvas export already has this assignment: fill its column
        roster.canvas_column = kit_columns[0]
        roster.moodle_column = CANVAS_ASSIGNMENT.match(kit_columns[0])["title"]
    for row in rows[1:]:
        values = {key: row[index].strip() if index < len(row) else "" for key, index in where.items()}
        if values.get("name", "").strip().lower() == "points possible" or not any(row):
            continue  # Canvas's second row holds each column's maximum, not a student
        name = values.get("name") or " ".join(part for part in (values.get("first"), values.get("last")) if part)
        student = RosterStudent(name=name, **{key: values.get(key, "") for key in
                                              ("section", *IDENTIFIERS)})
        if student.identifiers() or student.name:
            roster.students.append(student)
    return roster


# -- matching submissions to students ---------------------------------------------------------------
def _keys(value):
    return {value.casefold(), safe_name(value).casefold()}


def match(roster, results):
    """({roster index: result}, notes). A result's name names its student(s) by any identifier.

    A group submission (Gradescope) names several students joined by '+'; a
    Canvas name ends in `_USERID`. A name that fits no student, or more than one,
    is reported, never guessed; two results for one student keep the better one.
    """
    index, ambiguous = {}, set()
    for position, student in enumerate(roster.students):
        values = student.identifiers() or [student.name]
        for key in set().union(*(_keys(value) for value in values)):
            if key in index and index[key] != position:
                ambiguous.add(key)
            index[key] = position
    canvas_ids = {student.canvas_id: position for position, student in enumerate(roster.students)
                  if student.canvas_id}
    chosen, notes = {}, []
    for result in results:
        positions = []
        for part in str(result.name).split("+"):
            found = _find(part, index, ambiguous, canvas_ids)
            if found is None:
                notes.append(f"{result.name}: matches no single student of the roster; not in the LMS files")
            else:
                positions.append(found)
        for position in positions:
            other = chosen.get(position)
            if other is not None:
                better = max((other, result), key=lambda r: r.score)
                notes.append(f"{roster.students[position].name or position}: two submissions "
                             f"({other.name}, {result.name}); the LMS files get {better.name}'s {better.score:g}")
                result_for = better
            else:
                result_for = result
            chosen[position] = result_for
    return chosen, notes


def _find(part, index, ambiguous, canvas_ids):
    candidates = [part, re.sub(r"\.(py|ipynb)$", "", part)]  # alice.py / alice.ipynb: both files kept
    for candidate in candidates:
        key = candidate.casefold()
        if key in index and key not in ambiguous:
            return index[key]
    canvas = re.search(r"_(\d+)$", part)
    if canvas and canvas.group(1) in canvas_ids:
        return canvas_ids[canvas.group(1)]
    return None


# -- out: Canvas and Moodle CSVs --------------------------------------------------------------------
def _score(result):
    return "" if result is None else f"{round(result.score, 4):g}"


def _csv(rows):
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue()


def canvas_csv(roster, chosen, points_possible):
    """Canvas gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then the assignment."""
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", roster.canvas_column],
            ["Points Possible", "", "", "", "", f"{points_possible:g}"]]
    for position, student in enumerate(roster.students):
        rows.append([student.name, student.canvas_id, student.sis_user_id, student.sis_login_id, student.section,
                     _score(chosen.get(position))])
    return _csv(rows)


MOODLE_IDENTIFIERS = (("email", "Email address"), ("username", "Username"), ("idnumber", "ID number"))


def moodle_csv(roster, chosen):
    """Moodle grade import: identifier columns (map one of them at upload) and one column per grade item."""
    present = [(key, title) for key, title in MOODLE_IDENTIFIERS
               if any(getattr(student, key) for student in roster.students)]
    if not present:  # a Canvas roster has no Moodle identifier; its SIS login is the closest
        present = [("sis_login_id", "Username")]
    rows = [["Full name", *(title for _, title in present), roster.moodle_column]]
    for position, student in enumerate(roster.students):
        rows.append([student.name, *(getattr(student, key) for key, _ in present), _score(chosen.get(position))])
    return _csv(rows)


def write_lms_files(out, results, maxima, roster_path):
    """Write canvas_grades.csv and moodle_grades.csv into `out`; return notes for the instructor."""
    roster = read_roster(roster_path)
    chosen, notes = match(roster, results)
    write_atomic(Path(out) / "canvas_grades.csv", canvas_csv(roster, chosen, sum(maxima.values())))
    write_atomic(Path(out) / "moodle_grades.csv", moodle_csv(roster, chosen))
    missing = len(roster.students) - len(chosen)
    if missing:
        notes.append(f"{missing} of {len(roster.students)} roster students have no submission: "
                     "their LMS cells are empty, not zero")
    return notes
