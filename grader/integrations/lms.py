"""Grades out to learning-management systems: Canvas and Moodle gradebook imports.

(Who a downloaded submission belongs to is read in `grader.cohort.lms_names`.)
Beside grades.csv, one row per roster student:

* `canvas_grades.csv`: Canvas's gradebook import (Student, ID, SIS User ID, SIS Login ID, Section, then
  the assignment column `Title (id)` when the roster is a Canvas export that has one). An empty cell
  leaves the student's Canvas grade as it is. Canvas imports a cell as points of an existing assignment
  and reads the `Points Possible` row only to create a new one (canvas-lms gradebook_importer.rb
  `process_pp`, gradebook_uploads `createIndividualAssignment`): scores are scaled to the export's Points
  Possible of the column the kit fills, and a note says so, or says that it could not be read.
* `moodle_grades.csv`: Moodle's gradebook CSV import (Full name, identifier columns, the grade item).
  Careful: Moodle reads an empty or `-` cell of an existing grade item as "no grade" and *clears* a grade
  given by hand (grade/import/csv/classes/load_data.php: `$value === '' or $value == '-'` -> null); the
  notes say so when the class has students without a submission. It refuses the whole file when a grade
  is above the grade item's maximum (MDL-50650), so from a grading worksheet its scores are scaled to
  the worksheet's Maximum Grade, as the worksheet's are.
* `moodle_worksheet.csv`, when the roster is an assignment's "Download grading worksheet": the same
  worksheet with its Grade column filled. Moodle's "Upload grading worksheet" skips an empty Grade
  ("grade has no value"), an unchanged one, one out of 0..Maximum Grade, and one changed in Moodle after
  the worksheet's "Last modified (grade)" (mod/assign/feedback/offline/locallib.php), so students without
  a submission keep what they have. Scores are scaled to the worksheet's Maximum Grade.

Scores come from the final scores (overrides applied, see `grader.cohort.overrides`). Files are UTF-8
CSV, quoted where needed, every text cell through `grader.text.csv_cell`, so "Doe, Jane" and "Zoë Núñez"
arrive intact and a name like `=HYPERLINK(...)` stays text.

A roster is refused (RosterError) rather than written into a gradebook file that may be wrong: one
student on two rows (the same identifier twice: two cells for one student, one left empty), or a roster
that matches none, or under half, of the class's submissions (another course's export, other headers:
an import file of blanks). The message names the rows, the columns read and examples on both sides.
"""

import csv
import io
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Protocol, TypeVar

from grader.outfiles import write_atomic
from grader.text import Verbatim, clean, csv_row, safe_name

ASSIGNMENT_TITLE = "Attention exercises"  # a new Canvas/Moodle column when the roster names none
CANVAS_ASSIGNMENT = re.compile(r"^(?P<title>.+?)\s*\((?P<id>\d+)\)$")
PARTICIPANT = re.compile(r"^\s*\S.*?\s(?P<id>\d+)\s*$")  # "Participant 123456" (in the site's language)
LATE = re.compile(r"\blate\b", re.IGNORECASE)

# Roster column names, as Canvas, Moodle, Gradescope and hand-made rosters spell them (lower case).
COLUMNS = {
    "name": ("student", "name", "full name", "student name"),
    "first": ("first name", "first_name", "firstname", "given name"),
    "last": ("last name", "last_name", "lastname", "surname", "family name"),
    "canvas_id": ("id", "canvas id", "canvas user id", "canvas_user_id", "user id", "user_id"),
    "sis_user_id": ("sis user id", "sis_user_id", "sid", "student id", "student_id"),
    "sis_login_id": ("sis login id", "sis_login_id", "login id", "login_id", "login"),
    "section": ("section", "sections"),
    "email": ("email", "email address", "e-mail", "e-mail address"),
    "username": ("username", "user name"),
    "idnumber": ("id number", "idnumber", "id_number"),
    "participant": ("identifier",),  # Moodle's grading worksheet: "Participant 123456"
    "group": ("group", "group name", "group_name", "team"),
    "status": ("status",),
}
IDENTIFIERS = ("canvas_id", "sis_user_id", "sis_login_id", "email", "username", "idnumber")
TITLES = {"name": "name", "first": "first name", "last": "last name", "canvas_id": "Canvas user id",
          "sis_user_id": "SIS user id", "sis_login_id": "SIS login", "section": "section", "email": "email",
          "username": "username", "idnumber": "ID number", "participant": "Moodle participant", "group": "group",
          "status": "status"}
MATCH_SHARE = 0.5  # a roster that finds fewer of the class's submissions than this is the wrong roster
EXAMPLES = 5
WORKSHEET = ("identifier", "grade", "maximum grade", "last modified (grade)")




class Graded(Protocol):
    """What the LMS files read of a result: a SubmissionResult, or a stand-in before grading (cli)."""

    @property
    def name(self) -> str: ...

    @property
    def score(self) -> float: ...


Result = TypeVar("Result", bound=Graded)
Origins = Mapping[str, dict[str, Any]]  # {submission: its LMS origin as OUT/class.json keeps it (lms_names.Origin)}


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
    participant_id: str = ""  # Moodle's worksheet "Participant <id>", as in the download's folder names
    group: str = ""
    late: bool | None = None  # from a Moodle worksheet's Status ("... late"), else None
    row: list[str] = field(default_factory=list, repr=False)  # the roster row as read (worksheets are written back)
    line: int = 0  # where the row starts in the roster file (for messages)

    def identifiers(self) -> list[str]:
        return [value for value in (getattr(self, key) for key in IDENTIFIERS) if value]


@dataclass
class Roster:
    students: list[RosterStudent] = field(default_factory=list)
    canvas_column: str = ASSIGNMENT_TITLE  # `Title (assignment_id)` when the roster names it
    moodle_column: str = ASSIGNMENT_TITLE
    header: list[str] = field(default_factory=list)
    worksheet: bool = False  # a Moodle "Download grading worksheet" file
    label: str = "roster"  # the file, for messages
    read: list[tuple[str, str]] = field(default_factory=list)  # [(header cell, what the kit reads from it)]
    canvas_index: int | None = None  # where `canvas_column` is, when the roster is a Canvas export that has it
    canvas_points: str | None = None  # its cell of the Points Possible row as read (None: no such row)
    look_alikes: list[str] = field(default_factory=list)  # several `Attention ... (id)` columns: none is filled


class RosterError(ValueError):
    """A roster the LMS files must not be written from (the message says which rows or what matched)."""


def _normal(header):
    return " ".join((header or "").replace("\ufeff", "").strip().lower().split())


def read_roster(path: str | Path) -> Roster:
    """Students from a CSV: a Canvas gradebook export, a Moodle worksheet or participants export, a Canvas
    groups export, a Gradescope roster, or a plain list."""
    return read_roster_text(roster_text(path), str(path))


def roster_text(path: str | Path) -> str:
    """A roster file's text: UTF-8 (with or without a BOM), or UTF-16 with its BOM (Excel's "Unicode Text",
    tab-separated). ValueError, saying what to do, for anything else."""
    raw = Path(path).read_bytes()
    utf16 = raw.startswith((b"\xff\xfe", b"\xfe\xff"))
    try:
        return raw.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[:error.start].decode("utf-16" if utf16 else "utf-8", "replace").count("\n") + 1
        raise ValueError(f"it is not {'UTF-16' if utf16 else 'UTF-8'} text (line {line} holds bytes that cannot be "
                         f"read, from byte offset {error.start}: a file saved as Latin-1 or cp1252 does that): save it "
                         "as CSV UTF-8 (Excel: Save As > CSV UTF-8) and give it again") from None


def _delimiter(text):
    """',' as Canvas and Moodle write by default; ';' or a tab where the export's settings chose one (Canvas
    uses ';' for locales whose decimal separator is a comma) and the header line holds no comma."""
    first = text.split("\n", 1)[0]
    if "," in first:
        return ","
    return max((";", "\t"), key=first.count) if (";" in first or "\t" in first) else ","


def read_roster_text(text: str, label: str = "roster") -> Roster:
    text = text.lstrip("\ufeff")
    reader = csv.reader(io.StringIO(text), delimiter=_delimiter(text))
    rows, lines, start = [], [], 1
    for row in reader:  # each row with the line it starts on (a quoted cell may hold a newline)
        rows.append(row)
        lines.append(start)
        start = reader.line_num + 1
    if not rows:
        raise RosterError(f"{label}: the roster is empty")
    header = [_normal(cell) for cell in rows[0]]
    where = {}
    for key, names in COLUMNS.items():
        for index, cell in enumerate(header):
            if cell in names and key not in where:
                where[key] = index
    if "canvas_user_id" in header and "user_id" in header:  # Canvas's groups export: user_id is the SIS id there
        where["canvas_id"] = header.index("canvas_user_id")
        where.setdefault("sis_user_id", header.index("user_id"))
    if not any(key in where for key in (*IDENTIFIERS, "participant")) and "name" not in where:
        found = ", ".join(repr(clean(cell)) for cell in rows[0][:12]) or "nothing"
        raise RosterError(f"{label}: no column names a student (expected e.g. Student, ID, Email, Username; "
                          f"its first line reads {found})")
    roster = Roster(header=rows[0], worksheet=all(name in header for name in WORKSHEET), label=label,
                    read=[(clean(rows[0][index]), TITLES[key]) for key, index in sorted(where.items(),
                                                                                        key=lambda item: item[1])])
    kit_columns = [(index, column) for index, cell in enumerate(rows[0])
                   if (column := CANVAS_ASSIGNMENT.match(cell.strip())) and "attention" in cell.lower()]
    if len(kit_columns) == 1:  # the Canvas export already has this assignment: fill its column
        roster.canvas_index, column = kit_columns[0]
        roster.canvas_column = column.string
        roster.moodle_column = column["title"]
    elif kit_columns:  # which one is this assignment, nothing says: never guessed (canvas_points says so)
        roster.look_alikes = [column.string for _, column in kit_columns]
    rewritten = []  # ids a spreadsheet turned into numbers: (line, column, cell)
    for row, line in zip(rows[1:], lines[1:]):
        values = {key: clean(row[index]) if index < len(row) else "" for key, index in where.items()}
        for key in NUMERIC_IDS:
            values[key], lost = _spreadsheet_id(values.get(key, ""))
            if lost:
                rewritten.append(f"line {line} {TITLES[key]} {values[key]!r}")
        name = values.get("name") or " ".join(part for part in (values.get("first"), values.get("last")) if part)
        if name.lower() == "points possible":  # Canvas's second row holds each column's maximum, not a student
            if roster.canvas_index is not None and roster.canvas_points is None:
                roster.canvas_points = clean(row[roster.canvas_index]) if roster.canvas_index < len(row) else ""
            continue
        if not any(cell.strip() for cell in row):
            continue
        if name.lower() in CANVAS_MARKER_ROWS and not any(values.get(key) for key in IDENTIFIERS):
            continue  # a row of the export's own, under the header: no student ("Muted" was read as one)
        participant = PARTICIPANT.match(values.get("participant", ""))
        status = values.get("status", "")
        student = RosterStudent(name=name, **{key: values.get(key, "") for key in ("section", "group", *IDENTIFIERS)},
                                participant_id=participant["id"] if participant else "",
                                late=bool(LATE.search(status)) if status else None, row=list(row), line=line)
        if student.identifiers() or student.name or student.participant_id:
            roster.students.append(student)
    if rewritten:
        raise RosterError(f"{label}: {len(rewritten)} id(s) a spreadsheet rewrote as a number in scientific notation, "
                          f"the digits lost ({_some(rewritten)}): "
                          "no import can match those rows. Export the roster again from the LMS and give that file "
                          "unopened (or, in Excel, import the id columns as Text)")
    _refuse_repeated_students(roster)
    return roster


NUMERIC_IDS = ("canvas_id", "sis_user_id", "idnumber")  # ids a spreadsheet may have read as numbers
# Rows a Canvas gradebook export puts under its header that are no student (older exports: "Muted"; newer:
# "Manual Posting"), told by their name and the ids they lack
CANVAS_MARKER_ROWS = ("muted", "manual posting")


def _spreadsheet_id(cell: str) -> tuple[str, bool]:
    """(the id, whether its digits are lost): `5001.0`, a spreadsheet's float, is `5001`; `5.00E+03` has lost
    them. Leading zeros a spreadsheet dropped are matched loosely (see `_loose`)."""
    if re.fullmatch(r"\d+\.0+", cell):
        return cell.split(".")[0], False
    return cell, bool(re.fullmatch(r"\d(?:[.,]\d+)?[eE]\+?\d+", cell))


def _refuse_repeated_students(roster):
    """One row per student: an identifier on two rows would give that student two cells in the import
    (Canvas applies both, the empty one last or first) and leaves one of them "without a submission". An
    email counts only on rows without an account id (Moodle may let two accounts share one address), a
    name only on rows without any identifier (two students may share a name)."""
    rows: dict[tuple[str, str], tuple[str, str, list[RosterStudent]]] = {}
    for student in roster.students:
        keys = [(TITLES[key], getattr(student, key)) for key in IDENTIFIERS if key != "email" and getattr(student, key)]
        keys += [(TITLES["participant"], student.participant_id)] if student.participant_id else []
        for title, value in keys or ([("email", student.email)] if student.email else [("name", student.name)]):
            rows.setdefault((title, value.casefold()), (title, value, []))[2].append(student)
    repeated, seen = [], set()
    for title, value, students in rows.values():  # one entry per set of rows (not per identifier they share)
        on_lines = frozenset(student.line for student in students)
        if len(students) > 1 and on_lines not in seen:
            seen.add(on_lines)
            repeated.append((title, value, students))
    if not repeated:
        return
    lines = [f"{title} {value!r} on lines {', '.join(str(s.line) for s in students)}"
             + (f" ({', '.join(sorted({repr(s.name) for s in students if s.name}))})" if any(s.name for s in students)
                else "") for title, value, students in repeated[:EXAMPLES]]
    more = f"; and {len(repeated) - EXAMPLES} more" if len(repeated) > EXAMPLES else ""
    raise RosterError(f"{roster.label}: {len(repeated)} student(s) on more than one row: {'; '.join(lines)}{more}. "
                      "Each student must be on one row (one grade cell each): export the roster again, or "
                      "delete the repeated rows, then run the same command")


# -- matching submissions to students ---------------------------------------------------------------
def _exact(value):
    return value.casefold()


def _loose(value):
    """A name or id as a file name spells it (`Ada Lovelace` -> `ada_lovelace`), an id of digits without the
    leading zeros a spreadsheet drops (`00126` -> `126`): found only where no exact match is."""
    key = safe_name(value).casefold()
    return key.lstrip("0") or "0" if key.isdigit() else key


def _ids(student):
    return student.identifiers() or [student.name]


def _names(student):
    """The row's name, and as "First Last" where it is written "Last, First" (Canvas's Student column): a folder
    `ada_lovelace` is "Lovelace, Ada" (only `lovelace_ada` was found before)."""
    if not student.name:
        return []
    last, comma, first = student.name.partition(",")
    return [student.name] + ([f"{first.strip()} {last.strip()}"] if comma and first.strip() and last.strip() else [])


# Where a submission's name is looked for, in order: the rows' ids as written, as a file name or spreadsheet may
# spell them, then the rows' names (a row with ids is found by its name too: a folder named after the student)
TIERS = ((_ids, _exact), (_ids, _loose), (_names, _exact), (_names, _loose))


def _finder(roster):
    """A function (name, origin) -> [roster index]: the student(s) a submission is, [] when none for sure. A
    value that names two students is no answer in its tier (TIERS, tried in order)."""
    tiers: list[tuple[dict[str, int], set[str], Callable[[str], str]]] = []
    for values_of, spell in TIERS:
        index: dict[str, int] = {}
        ambiguous: set[str] = set()
        for position, student in enumerate(roster.students):
            for key in {spell(value) for value in values_of(student)}:
                if key in index and index[key] != position:
                    ambiguous.add(key)
                index[key] = position
        tiers.append((index, ambiguous, spell))
    canvas_ids = {s.canvas_id: p for p, s in enumerate(roster.students) if s.canvas_id}
    participants = {s.participant_id: p for p, s in enumerate(roster.students) if s.participant_id}
    return lambda name, origin: _positions(name, origin, roster, tiers, canvas_ids, participants)


def match(roster: Roster, results: Iterable[Result], origins: Origins | None = None
          ) -> tuple[dict[int, Result], list[str]]:
    """({roster index: result}, notes). A result's name names its student(s) by any identifier.

    A submission from an LMS download is found by the id the download gave it (`origins`: Canvas user id,
    Moodle participant id). Otherwise a group submission (Gradescope) names several students joined by
    '+'; a Canvas name ends in `_USERID`. When the roster has a group column, the grade of a member's
    group goes to every member without a submission of their own (Canvas names a group's files after
    the group and one representative; Moodle's team folders after the group). A name that fits no
    student, or more than one, is reported, never guessed; two results for one student keep the better.
    """
    origins = origins or {}
    find = _finder(roster)
    chosen: dict[int, Result] = {}
    notes: list[str] = []
    shared: dict[str, int] = {}  # result name -> how many students it grades (a group's: more than one)
    for result in results:
        positions = find(result.name, origins.get(result.name))
        shared[result.name] = len(positions)
        if not positions:
            notes.append(f"{result.name}: matches no single student of the roster; not in the LMS files")
        for position in positions:
            other, kept = chosen.get(position), result
            if other is not None:
                # the student's own submission before a group's (as a group's grade goes only to members
                # without one of their own); between two of one kind, the better
                kept = min((other, result), key=lambda r: (shared[r.name] > 1, -r.score))
                why = "their own" if (shared[other.name] > 1) != (shared[result.name] > 1) else "the better"
                notes.append(f"{roster.students[position].name or position}: two submissions ({other.name}, "
                             f"{result.name}); the LMS files get {kept.name}'s {kept.score:g} ({why})")
            chosen[position] = kept
    own = dict(chosen)
    groups: dict[str, list[Result]] = {}  # a group's grade for its members who submitted nothing
    for position, result in own.items():
        group = roster.students[position].group
        if group and all(result is not other for other in groups.get(group, [])):
            groups.setdefault(group, []).append(result)
    for group, submitted in groups.items():
        members = [member for member, student in enumerate(roster.students)
                   if student.group == group and member not in own]
        if not members:
            continue
        the_group_s = submitted if len(submitted) == 1 else [
            result for result in submitted if _names_group(result.name, group, origins)]
        if len(the_group_s) != 1:  # a member's own file is no more the group's than another's: never guessed
            notes.append(f"group {group}: {len(submitted)} submissions of its members "
                         f"({', '.join(result.name for result in submitted)}), none of them named after the group "
                         f"alone, so {', '.join(roster.students[m].name or str(m) for m in members)} (no file of "
                         "their own) get no grade from them in the LMS files: grade them by hand")
            continue
        for member in members:
            chosen[member] = the_group_s[0]
    return chosen, notes


def unmatched(roster: Roster, names: Iterable[str], origins: Origins | None = None) -> list[str]:
    """The submissions (`names`, as grades.csv names them) that no roster row names."""
    origins = origins or {}
    find = _finder(roster)
    return [name for name in names if not find(name, origins.get(name))]


def refuse_unmatched(roster: Roster, results: Sequence[Graded], chosen: Mapping[int, Graded],
                     origins: Origins | None = None) -> None:
    """RosterError when a graded submission matches no roster row while some row has no submission: that row's
    empty cell may be the very student whose file it is (an id Excel rewrote, a file sent under another name),
    and the import would clear or skip a grade the kit gave. A submission of someone the roster does not hold,
    in a class whose every row has its grade, leaves no cell wrong: a note (match) says so."""
    strays = unmatched(roster, [result.name for result in results], origins)
    empty = [student for position, student in enumerate(roster.students) if position not in chosen]
    if not strays or not empty:
        return
    listed, rows = _some([repr(name) for name in strays]), _some([f"line {s.line} {_who(s)}" for s in empty])
    raise RosterError(
        f"{roster.label}: {len(strays)} graded submission(s) match no roster row ({listed}) while "
        f"{len(empty)} roster row(s) have no submission ({rows}): their empty cells may belong to those "
        "submissions, and an import would skip or clear their grades. Make each submission name its student: "
        "check the roster's ids (Excel turns 00126 into 126 and long ids into 5.00E+03: export it again and do "
        "not open it in Excel), rename the file after the student's id or email, or add the student to the "
        "roster; a student who left the course: take their file out of the class folder. Then run the same "
        "command: only what changed is graded again")


def _names_group(name: str, group: str, origins: Origins) -> bool:
    """Whether a submission is named after `group` (Canvas names a group's files after the group and one
    member; Moodle's team folders after the group), letters and digits compared without case."""
    named = (origins.get(name) or {}).get("student") or name
    return _letters(named) == _letters(group) != ""


def _letters(text: str) -> str:
    return "".join(character for character in str(text).casefold() if character.isalnum())


def check_match(roster: Roster, names: Iterable[str], origins: Origins | None = None, when: str = "") -> None:
    """RosterError unless the roster finds at least half of the class's submissions (`names`, as grades.csv
    names them) and at least one: otherwise it is another class's export or a file read with the wrong
    columns, and the LMS files would hold blanks. The message says what was read and what did not match."""
    names = list(names)
    if not names:
        return
    origins = origins or {}
    find = _finder(roster)
    found = {name: find(name, origins.get(name)) for name in names}
    matched = [name for name in names if found[name]]
    if matched and len(matched) >= MATCH_SHARE * len(names):
        return
    taken = {position for positions in found.values() for position in positions}
    unmatched = [name for name in names if not found[name]]
    spare = [student for position, student in enumerate(roster.students) if position not in taken]
    columns = ", ".join(f"{cell!r} ({what})" for cell, what in roster.read) or "none"
    ignored = [clean(cell) for cell in roster.header if clean(cell) not in {cell for cell, _ in roster.read}]
    examples, rows = _some([repr(name) for name in unmatched]), _some([f"line {s.line} {_who(s)}" for s in spare])
    raise RosterError(
        f"{roster.label}: the roster matches {len(matched)} of the class's {len(names)} submission(s) "
        f"(expected: at least {max(1, -(-len(names) // 2))}: is it this class's export?). Columns read: {columns}"
        + (f"; not read: {', '.join(repr(cell) for cell in ignored[:8])}{', ...' if len(ignored) > 8 else ''}"
           if ignored else "")
        + f". {len(roster.students)} roster row(s). Submissions no row names, e.g.: {examples or 'none'}. "
        f"Roster rows no submission names, e.g.: {rows or 'none'}. A submission is found by the Canvas user id "
        "or Moodle participant number of an LMS download, else by its name as an identifier (email, username, "
        "SIS id, ID number) or a name of the roster. Give this course's export (Canvas: Grades > Export; "
        f"Moodle: the assignment's grading worksheet), or grade without ROSTER{when}")


def _some(items: Sequence[str]) -> str:
    """The first EXAMPLES of `items`, joined, with "..." for the rest."""
    return ", ".join(items[:EXAMPLES]) + (", ..." if len(items) > EXAMPLES else "")


def _who(student):
    ids = [f"{value}" for value in (*student.identifiers(), student.participant_id) if value]
    return repr(student.name or "?") + (f" ({', '.join(ids[:2])})" if ids else "")


def _positions(name, origin, roster, tiers, canvas_ids, participants):
    if origin:
        lms, key, who = origin.get("lms"), origin.get("key", ""), origin.get("student", "")
        if lms == "canvas" and key in canvas_ids:
            return [canvas_ids[key]]
        if lms == "moodle" and key in participants:
            return [participants[key]]
        if lms == "moodle" and who:  # a team submission: named after the group
            members = [p for p, s in enumerate(roster.students) if s.group and s.group.casefold() == who.casefold()]
            if members:
                return members
    positions = []
    for part in str(name).split("+"):
        found = _find(part, tiers, canvas_ids, participants)
        if found is None:
            return []
        positions.append(found)
    return positions


def _find(part, tiers, canvas_ids, participants):
    candidates = [part, re.sub(r"\.(py|ipynb)$", "", part)]  # alice.py / alice.ipynb: both files kept
    for index, ambiguous, spell in tiers:
        for candidate in candidates:
            key = spell(candidate)
            if key in index and key not in ambiguous:
                return index[key]
    trailing = re.search(r"_(\d+)$", part)
    if trailing and trailing.group(1) in canvas_ids:
        return canvas_ids[trailing.group(1)]
    if trailing and trailing.group(1) in participants:
        return participants[trailing.group(1)]
    return None


# -- out: Canvas and Moodle CSVs --------------------------------------------------------------------
def _score(result, scores=None, scale=1.0):
    if result is None:
        return ""
    score = scores.get(result.name, result.score) if scores else result.score
    # In decimal, half up: the float product rounded 26.55675 down and 5.98125 up (binary fractions, both cut at
    # 4 places); 12 significant digits of the scale undo its division (50 / 100, 33.3 / 100).
    value = (Decimal(repr(float(score))) * Decimal(f"{scale:.12g}")).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
    return f"{float(value):.12g}"


def _number(cell):
    """A maximum as Canvas or Moodle writes it ("50.00"; "50,00" in a decimal-comma export), else None."""
    text = (cell or "").strip()
    if re.fullmatch(r"\d+(?:[.,]\d+)?", text):
        return float(text.replace(",", "."))
    # grouped thousands, "1,000.00" or "1.000,00" (or a space): the group mark is never the decimal one
    grouped = re.fullmatch(r"\d{1,3}(?P<mark>[.,\s\u00a0\u202f])\d{3}(?:(?P=mark)\d{3})*(?:(?P<point>[.,])\d+)?", text)
    if not grouped or grouped["mark"] == grouped["point"]:
        return None
    return float(text.replace(grouped["mark"], "").replace(",", "."))


def canvas_points(roster: Roster, total: float) -> tuple[float, str | None]:
    """(the Points Possible canvas_grades.csv is out of, note). Canvas imports a cell as points of an existing
    assignment, whatever the file's Points Possible row says (it reads that row only to create an assignment),
    so the scores go out of the export's Points Possible for the column the kit fills. A roster without that
    column makes Canvas create the assignment, out of the kit's total: no note. Unreadable: the total, noted."""
    if roster.canvas_index is None:
        return total, (f"canvas_grades.csv: a new column {roster.canvas_column!r}, out of {total:g}: {roster.label} "
                       f"has {len(roster.look_alikes)} columns that could be this assignment "
                       f"({', '.join(repr(name) for name in roster.look_alikes)}) and none was filled; importing it "
                       "creates another assignment: delete or rename the column that is not, export again, and "
                       "grade again") if roster.look_alikes else None
    column = repr(roster.canvas_column)
    if roster.canvas_points is None:
        return total, (f"canvas_grades.csv: scores out of the kit's {total:g}: {roster.label} has no Points Possible "
                       f"row for {column}; check that assignment's points in Canvas before importing (Canvas "
                       "imports each score as points of the assignment)")
    points = _number(roster.canvas_points)
    if not points:
        return total, (f"canvas_grades.csv: scores out of the kit's {total:g}: the Points Possible of {column} in "
                       f"{roster.label} reads {roster.canvas_points!r}, not a number of points; check that "
                       "assignment's points in Canvas before importing (Canvas imports each score as points of "
                       "the assignment)")
    if abs(points - total) < 1e-9:
        return total, None
    return points, (f"canvas_grades.csv: scores scaled from {total:g} to {points:g}, the Points Possible of {column} "
                    f"in {roster.label} (Canvas imports each score as points of the existing assignment and keeps "
                    "its Points Possible)")


def _csv(rows):
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n").writerows(csv_row(row) for row in rows)
    return buffer.getvalue()


def canvas_csv(roster: Roster, chosen: Mapping[int, Graded], points_possible: float,
               scores: Mapping[str, float] | None = None, scale: float = 1.0) -> str:
    """Canvas gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then the assignment, out of
    `points_possible` (each score times `scale`: see `canvas_points`)."""
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", roster.canvas_column],
            ["Points Possible", "", "", "", "", f"{points_possible:g}"]]
    for position, student in enumerate(roster.students):
        cell = "EX" if excused(roster, student) else _score(chosen.get(position), scores, scale)
        rows.append([student.name, *map(Verbatim, (student.canvas_id, student.sis_user_id, student.sis_login_id)),
                     student.section, cell])
    return _csv(rows)


def excused(roster: Roster, student: RosterStudent) -> bool:
    """Whether the Canvas export marks the student excused (`EX`) in the column the kit fills: a score imported
    there would take the excuse away, so the cell stays EX."""
    index = roster.canvas_index
    return index is not None and index < len(student.row) and student.row[index].strip().upper() == "EX"


MOODLE_IDENTIFIERS = (("email", "Email address"), ("username", "Username"), ("idnumber", "ID number"))
# What each gradebook import matches a row to its student by (a Canvas roster's SIS login stands in for Moodle's
# username): a roster with none of them gives no file for that LMS.
CANVAS_IDENTIFIERS = ("canvas_id", "sis_user_id", "sis_login_id")
MOODLE_KEYS = ("email", "username", "idnumber", "sis_login_id")


def moodle_csv(roster: Roster, chosen: Mapping[int, Graded], scores: Mapping[str, float] | None = None,
               scales: Mapping[int, float] | None = None) -> str:
    """Moodle grade import: identifier columns (map one of them at upload) and one column per grade item, each
    student's score times their `scales` entry (see `moodle_scales`; 1 where it has none). A student without a
    submission whose worksheet row holds a grade keeps it: this import would clear it with an empty cell."""
    scales = scales or {}
    held = worksheet_grades(roster)
    present = [(key, title) for key, title in MOODLE_IDENTIFIERS
               if any(getattr(student, key) for student in roster.students)]
    if not present:  # a Canvas roster has no Moodle identifier; its SIS login is the closest
        present = [("sis_login_id", "Username")]
    rows = [["Full name", *(title for _, title in present), roster.moodle_column]]
    for position, student in enumerate(roster.students):
        cell = _score(chosen.get(position), scores, scales.get(position, 1.0))
        rows.append([student.name, *(Verbatim(getattr(student, key)) for key, _ in present),
                     cell if position in chosen else held.get(position, cell)])
    return _csv(rows)


def worksheet_cells(roster: Roster, title: str) -> list[str]:
    """Each roster row's cell of the Moodle worksheet column `title` (lower case; "" where a row is short), in
    roster order; [] for a roster that is no worksheet or has no such column."""
    header = [_normal(cell) for cell in roster.header]
    if not roster.worksheet or title not in header:
        return []
    column = header.index(title)
    return [student.row[column] if column < len(student.row) else "" for student in roster.students]


def worksheet_grades(roster: Roster) -> dict[int, str]:
    """{roster index: the grade a Moodle worksheet row holds already, as a number} ({} for other rosters)."""
    values = {position: _number(cell) for position, cell in enumerate(worksheet_cells(roster, "grade"))}
    return {position: f"{value:g}" for position, value in values.items() if value is not None}


def locked_rows(roster: Roster) -> list[str]:
    """The worksheet rows whose "Grade can be changed" says No: Moodle keeps their grades whatever a file says."""
    return [student.name or _who(student) for student, cell in
            zip(roster.students, worksheet_cells(roster, "grade can be changed"))
            if _normal(cell) in ("no", "nein", "non", "nee")]


def moodle_scales(roster: Roster, points_possible: float, files: str = "moodle_worksheet.csv"
                  ) -> tuple[dict[int, float], list[str]]:
    """({roster index: factor}, notes): each worksheet row's Maximum Grade over the kit's total, so that the
    worksheet and moodle_grades.csv (`files`, for the notes) hold the same grades. Moodle's worksheet upload
    skips a grade above the maximum, its gradebook CSV import refuses the file. A row whose Maximum Grade
    cannot be read keeps the kit's total, and a note says so. Not a worksheet: {} (the kit's total)."""
    if not roster.worksheet or not points_possible:
        return {}, []
    scales, maxima, unread = {}, [], []
    for position, (student, cell) in enumerate(zip(roster.students, worksheet_cells(roster, "maximum grade"))):
        maximum = _number(cell)
        if not maximum:
            unread.append(f"line {student.line} {clean(cell)!r}")
            continue
        scales[position] = maximum / points_possible
        maxima += [maximum] if maximum not in maxima else []
    notes = []
    if any(abs(maximum - points_possible) > 1e-9 for maximum in maxima):
        notes.append(f"{files}: scores scaled from {points_possible:g} to the assignment's Maximum Grade "
                     f"{', '.join(f'{maximum:g}' for maximum in maxima)} (Moodle skips, or refuses, a grade above "
                     "the maximum)")
    if unread:
        notes.append(f"{files}: the Maximum Grade of {len(unread)} worksheet row(s) is not a number "
                     f"({_some(unread)}): their scores "
                     f"are out of the kit's {points_possible:g}")
    return scales, notes


def moodle_worksheet(roster: Roster, chosen: Mapping[int, Graded], scores: Mapping[str, float] | None = None,
                     scales: Mapping[int, float] | None = None) -> str:
    """The grading worksheet as downloaded, its Grade column filled (times `scales`: see `moodle_scales`)."""
    scales = scales or {}
    header = [_normal(cell) for cell in roster.header]
    grade = header.index("grade")
    rows = [list(roster.header)]
    for position, student in enumerate(roster.students):
        row = list(student.row) + [""] * (len(header) - len(student.row))
        result = chosen.get(position)
        if result is not None:
            row[grade] = _score(result, scores, scales.get(position, 1.0))
        rows.append(row)
    return _csv(rows)


def write_lms_files(out: str | Path, results: Sequence[Graded], maxima: Mapping[str, float],
                    roster_path: str | Path | None = None, origins: Origins | None = None,
                    scores: Mapping[str, float] | None = None, roster: Roster | None = None,
                    no_verdict: Iterable[str] = ()) -> list[str]:
    """Write canvas_grades.csv and moodle_grades.csv (and moodle_worksheet.csv for a worksheet roster)
    into `out`; return notes for the instructor. `scores`: {name: final score} (overrides applied).
    `no_verdict`: submissions the grader itself failed on (a zero that is no grade): their cells stay empty."""
    if roster is None:
        if roster_path is None:
            raise TypeError("write_lms_files needs a roster or a roster_path")
        roster = read_roster(roster_path)
    check_match(roster, [result.name for result in results], origins)  # before any file is written
    chosen, notes = match(roster, results, origins)
    refuse_unmatched(roster, results, chosen, origins)
    failed = sorted({result.name for result in chosen.values()} & set(no_verdict))
    if failed:  # an import would record the placeholder zero as the student's grade
        chosen = {position: result for position, result in chosen.items() if result.name not in failed}
        notes.append(f"{_some(failed)}: the grader failed on their file(s), so their cells in the LMS files are "
                     "empty, not 0, until a run grades them")
    points = sum(maxima.values())
    canvas_total, canvas_note = canvas_points(roster, points)
    writes_moodle = _has_identifier(roster, MOODLE_KEYS)
    moodle_files = "moodle_worksheet.csv" + (" and moodle_grades.csv" if writes_moodle else "")
    scales, moodle_notes = moodle_scales(roster, points, moodle_files)
    files: list[tuple[str, tuple[str, ...], list[str], Callable[[], str]]] = [
        ("canvas_grades.csv", CANVAS_IDENTIFIERS, [canvas_note] if canvas_note else [],
         lambda: canvas_csv(roster, chosen, canvas_total, scores, canvas_total / points if points else 1.0)),
        ("moodle_grades.csv", MOODLE_KEYS, [], lambda: moodle_csv(roster, chosen, scores, scales))]
    for name, ids, file_notes, contents in files:
        if _has_identifier(roster, ids):
            write_atomic(Path(out) / name, contents())
            notes += file_notes
        else:  # rows the LMS cannot match to anyone: no file, rather than one that imports nothing
            (Path(out) / name).unlink(missing_ok=True)
            notes.append(f"{name} not written: {roster.label} gives no identifier that import matches students by "
                         f"({', '.join(TITLES.get(key, key) for key in ids)})")
    if roster.worksheet:
        write_atomic(Path(out) / "moodle_worksheet.csv", moodle_worksheet(roster, chosen, scores, scales))
        notes += moodle_notes
        locked = locked_rows(roster)
        if locked:
            notes.append(f"{moodle_files}: {len(locked)} worksheet row(s) say the grade cannot be changed "
                         f"({_some(locked)}): Moodle keeps "
                         "their current grades whatever these files say; unlock them in the gradebook first if the "
                         "kit's are meant")
        kept = [roster.students[position].name for position in worksheet_grades(roster) if position not in chosen]
        if kept and writes_moodle:
            notes.append(f"moodle_grades.csv: {len(kept)} student(s) without a submission keep the grade their "
                         f"worksheet row holds ({_some(kept)}), which an empty cell would clear")
    kept_excused = [student.name or _who(student) for student in roster.students if excused(roster, student)]
    if kept_excused and _has_identifier(roster, CANVAS_IDENTIFIERS):
        notes.append(f"canvas_grades.csv: {len(kept_excused)} student(s) excused in {roster.label} keep EX, not the "
                     f"kit's score ({_some(kept_excused)}): to grade them, "
                     "remove the excuse in Canvas, export again and run the same command")
    missing = len(roster.students) - len(chosen)
    if missing:
        notes.append(f"{missing} of {len(roster.students)} roster students have no submission: their cells are "
                     "empty, not zero (Canvas and Moodle's worksheet upload leave an empty cell's grade alone; "
                     "Moodle's gradebook CSV import clears it: leave their rows out of moodle_grades.csv "
                     "if they have grades given by hand)")
    return notes


def _has_identifier(roster, keys):
    return any(getattr(student, key) for student in roster.students for key in keys)


def roster_record(roster: Roster, results: Iterable[Graded], origins: Origins | None = None) -> list[dict[str, Any]]:
    """The roster for OUT/class.json: each student's name, ids, group, late flag and submission (or None)."""
    chosen, _ = match(roster, results, origins)
    students = []
    for position, student in enumerate(roster.students):
        record = {key: value for key, value in asdict(student).items()
                  if key not in ("row", "line") and value not in ("", None)}
        result = chosen.get(position)
        record["submission"] = result.name if result is not None else None
        students.append(record)
    return students
