"""Grade overrides: an instructor's CSV of (student, step or total, points, reason), applied on top of grading.

    student,step,points,reason
    doejane_5000,masking,15,"mask built with the opposite convention, agreed in office hours"
    nunezzoe_5001,total,80,"medical extension: graded by hand"

`student` names a submission as grades.csv does (or any roster identifier or name, when the class has a
roster); `step` is a step key of `grader.chapter` or `total`; `points` is what that step (or the whole
submission) is worth instead, between 0 and its maximum. A step override changes that step and so the
total; a total override replaces the total and leaves the steps as graded. Results files are never
changed: the overrides live in OUT/class.json and are applied to grades.csv, the LMS files and the
report, each listed with its reason.

An override that cannot apply is an error, never a note: a student who is no submission of the class (the
message names the closest names), a roster student without a submission, a name that fits two students,
two different overrides of one step, a step that is not the chapter's, points out of range. A run that
grades another file for a student with overrides (a regrade from a file sent later, a new download)
asks what to do with them first (see grader.cli.kept_overrides).
"""

import csv
import difflib
import hashlib
import io
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from grader.chapter import BY_KEY, STEP_KEYS, TOTAL_POINTS
from grader.results import SubmissionResult
from grader.text import clean

TOTAL = "total"
COLUMNS = {"student": ("student", "submission", "name", "id"), "step": ("step", "target", "step or total"),
           "points": ("points", "score", "grade"), "reason": ("reason", "why", "comment")}


@dataclass(frozen=True)
class Override:
    student: str
    step: str  # a step key, or "total"
    points: float
    reason: str
    where: str = ""  # "overrides.csv, line 3": where the instructor wrote it (for messages)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        return f"{self.step} set to {self.points:g} ({self.reason})"


def read_overrides(path: str | Path) -> list[Override]:
    """The overrides in a CSV file; ValueError naming the line of the first bad row."""
    text = Path(path).read_text(encoding="utf-8-sig")
    # ';' where Excel saves CSV for a locale whose decimal mark is a comma (and then "7,5" is 7.5 points)
    first_line = text.split("\n", 1)[0]
    semicolons = ";" in first_line and "," not in first_line
    rows = list(csv.reader(io.StringIO(text), delimiter=";" if semicolons else ","))
    if not rows:
        return []
    header = [" ".join(cell.strip().lower().split()) for cell in rows[0]]
    where = {}
    for key, names in COLUMNS.items():
        found = [index for index, cell in enumerate(header) if cell in names]
        if not found:
            raise ValueError(f"{path}: no {key!r} column (the header must be: student,step,points,reason)")
        where[key] = found[0]
    overrides = []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len([cell for cell in row if cell.strip()]) > len(rows[0]):  # `5,5` unquoted: two cells, read as 5
            raise ValueError(f"{path}, line {line}: {len(row)} cells where the header has {len(rows[0])} (a decimal "
                             "comma, 5,5, splits a cell: write 5.5, or quote it; quote a reason that holds a comma)")
        cell = {key: (row[index].strip() if index < len(row) else "") for key, index in where.items()}
        if semicolons and re.fullmatch(r"\d+,\d+", cell["points"]):
            cell["points"] = cell["points"].replace(",", ".")
        overrides.append(_parse(cell, f"{path}, line {line}", f"{Path(path).name}, line {line}"))
    return overrides


class OverrideError(ValueError):
    """Overrides that cannot apply to this class (one line per problem)."""


def _parse(cell, where, short):
    step = cell["step"].lower()
    if step not in (TOTAL, *STEP_KEYS):
        close = difflib.get_close_matches(step, (TOTAL, *STEP_KEYS), n=1, cutoff=0.6)
        raise ValueError(f"{where}: step {cell['step']!r} is neither 'total' nor one of {', '.join(STEP_KEYS)}"
                         + (f" (did you mean {close[0]}?)" if close else ""))
    try:  # digits with one decimal point: float() also takes "1_0" (10), "1e1", "nan" and "infinity"
        if not re.fullmatch(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)\s*", cell["points"]):
            raise ValueError
        points = float(cell["points"])
    except ValueError:
        raise ValueError(f"{where}: points {cell['points']!r} is not a number") from None
    points += 0.0  # -0 is 0 (grades.csv would show "-0")
    top = TOTAL_POINTS if step == TOTAL else BY_KEY[step].points
    if not 0 <= points <= top:
        raise ValueError(f"{where}: {points:g} points is outside 0..{top:g} for {step}")
    if not cell["student"]:
        raise ValueError(f"{where}: no student named")
    if not cell["reason"]:
        raise ValueError(f"{where}: give a reason (it is listed in the report beside the grade)")
    return Override(clean(cell["student"]), step, points, clean(cell["reason"], limit=500), short)


def resolve(overrides: Iterable[Override], names: Collection[str], aliases: Mapping[str, str | None] | None = None,
            absent: Iterable[str] = (), members: Mapping[str, list[str]] | None = None
            ) -> tuple[dict[str, list[Override]], list[str]]:
    """({submission name: [Override]}, notes): each override's student found among `names` (exactly,
    then ignoring case), then among `aliases` ({roster identifier or name: submission name, or None when
    it names several}). OverrideError listing every override that cannot apply: its student is no
    submission (`absent`: roster identifiers and names of students without one), or two overrides give
    one step different points, or it names one student of a group's submission (`members`: {submission: the
    names of the roster students it grades}): applied to the submission, it would change every member's grade."""
    by_fold = {name.casefold(): name for name in names}
    spelt = {key.casefold(): key for key in aliases or {}}  # for messages
    aliases = {key.casefold(): value for key, value in (aliases or {}).items()}
    absent = {key.casefold() for key in absent if key}
    found: dict[str, list[Override]] = {}
    notes: list[str] = []
    problems: list[str] = []
    for override in overrides:
        wanted = override.student.casefold()
        name = override.student if override.student in names else by_fold.get(wanted)
        by_member = name is None
        name = name or aliases.get(wanted)
        where = f"{override.where}: " if override.where else ""
        if name is None:
            problems.append(where + _unknown(override.student, names, aliases, absent, spelt))
            continue
        group = (members or {}).get(name, [])
        if by_member and len(group) > 1:
            problems.append(f"{where}{override.student!r} is one of the {len(group)} students graded from the group "
                            f"submission {name} ({', '.join(group[:6])}): an override applies to a submission, so it "
                            f"would change every member's grade. To change the group's, name {name}; to change one "
                            "member's alone, change it in the LMS by hand")
            continue
        same = [o for o in found.get(name, []) if o.step == override.step]
        if same and (same[0].points, same[0].reason) == (override.points, override.reason):
            notes.append(f"{where}the override of {override.step} for {name} is listed twice; applied once")
            continue
        if same:
            problems.append(f"{where}a second override of {override.step} for {name} ({override.points:g}; "
                            f"the other gives {same[0].points:g}{', ' + same[0].where if same[0].where else ''}): "
                            "keep one line per student and step")
            continue
        found.setdefault(name, []).append(override)
    if problems:
        raise OverrideError("; ".join(problems) + ". Correct the overrides file and give it again (OVERRIDES=...: it "
                            "replaces the overrides recorded in OUT/class.json; an empty file clears them)")
    return found, notes


def _unknown(student, names, aliases, absent, spelt):
    """Why an override's student is none of the class's submissions, with the closest names."""
    wanted = student.casefold()
    if wanted in aliases:  # aliases_of maps a name shared by several students to None
        return f"{student!r} names more than one student of the roster: name the submission (see grades.csv)"
    if wanted in absent:
        return (f"{student!r} is on the roster but has no submission: an override changes a graded submission "
                "(give this student's grade in the LMS itself), remove the line")
    return (f"override for {student!r} names no submission of this class ({closest(student, names, aliases, spelt)}; "
            "a student is named as in grades.csv, or by a roster identifier)")


def closest(student, names, aliases, spelt=None):
    """`closest: 'a', 'b'` (or `no name is close`): the submissions and roster identifiers nearest `student`
    (`aliases` by casefolded key, as `resolve` folds them; `spelt`: their spelling for the message)."""
    spelt = spelt or {}
    known = {name.casefold(): name for name in names}
    known.update({key: spelt.get(key, key) for key, value in aliases.items() if value})
    close = difflib.get_close_matches(student.casefold(), list(known), n=3, cutoff=0.6)
    return f"closest: {', '.join(repr(known[key]) for key in close)}" if close else "no name is close"


def source_digest(path: str | Path) -> str:
    """The digest of the file a student's overrides were given for (OUT/class.json `override_files`): a
    later run that grades other bytes for that student asks before applying them again."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:32]


def final_scores(result: SubmissionResult, overrides: Iterable[Override] = ()) -> dict[str, Any]:
    """{"steps": {key: points}, "total": points, "overrides": [dicts]} for a SubmissionResult."""
    steps = result.step_scores()
    total_override = None
    for override in overrides:
        if override.step == TOTAL:
            total_override = override.points
        else:
            steps[override.step] = override.points
    total = total_override if total_override is not None else sum(steps.values())
    return {"steps": {key: round(value, 4) for key, value in steps.items()}, "total": round(total, 4),
            "overrides": [override.as_dict() for override in overrides]}
