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
"""

import csv
import io
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.chapter import BY_KEY, STEP_KEYS, TOTAL_POINTS
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

    def as_dict(self):
        return asdict(self)

    def describe(self):
        return f"{self.step} set to {self.points:g} ({self.reason})"


def read_overrides(path):
    """The overrides in a CSV file; ValueError naming the line of the first bad row."""
    text = Path(path).read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
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
        cell = {key: (row[index].strip() if index < len(row) else "") for key, index in where.items()}
        overrides.append(_parse(cell, f"{path}, line {line}"))
    return overrides


def _parse(cell, where):
    step = cell["step"].lower()
    if step not in (TOTAL, *STEP_KEYS):
        raise ValueError(f"{where}: step {cell['step']!r} is neither 'total' nor one of {', '.join(STEP_KEYS)}")
    try:
        points = float(cell["points"])
    except ValueError:
        raise ValueError(f"{where}: points {cell['points']!r} is not a number") from None
    top = TOTAL_POINTS if step == TOTAL else BY_KEY[step].points
    if not 0 <= points <= top:
        raise ValueError(f"{where}: {points:g} points is outside 0..{top:g} for {step}")
    if not cell["student"]:
        raise ValueError(f"{where}: no student named")
    if not cell["reason"]:
        raise ValueError(f"{where}: give a reason (it is listed in the report beside the grade)")
    return Override(clean(cell["student"]), step, points, clean(cell["reason"], limit=500))


def resolve(overrides, names, aliases=None):
    """({submission name: [Override]}, problems): each override's student found among `names` (exactly,
    then ignoring case), then among `aliases` ({roster identifier or name: submission name})."""
    by_fold = {name.casefold(): name for name in names}
    aliases = {key.casefold(): value for key, value in (aliases or {}).items()}
    found, problems = {}, []
    for override in overrides:
        name = override.student if override.student in names else by_fold.get(override.student.casefold())
        name = name or aliases.get(override.student.casefold())
        if name is None:
            problems.append(f"override for {override.student!r} names no graded submission (see grades.csv); "
                            "not applied")
            continue
        same = [o for o in found.get(name, []) if o.step == override.step]
        if same:
            problems.append(f"two overrides of {override.step} for {name}; the later one ({override.points:g}) applies")
            found[name].remove(same[0])
        found.setdefault(name, []).append(override)
    return found, problems


def final_scores(result, overrides=()):
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
