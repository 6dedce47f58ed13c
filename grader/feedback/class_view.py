"""The cohort report's view of the class as people: a row per student, who did not submit, overrides.

Reads OUT/class.json (written with grades.csv; see grader.cohort.class_record) as plain JSON:
roster names and ids, LMS origins and late flags, and the final scores (overrides applied), so that
the report, grades.csv and the LMS files show the same numbers. Without a class.json (a class graded
by an older kit), every row is just the submission's name and its graded score.

Also the per-check and per-step causes of the item analysis: which diagnosed mistakes made people fail
each check, most common first.
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from grader.chapter import BY_KEY, STEP_KEYS
from grader.check.causes import CAUSES
from grader.feedback import diagnosis, page
from grader.results import TestResult
from grader.sandbox.limits import Limit
from grader.text import clean
from grader.text import html as esc

NOT_DONE = ("not implemented yet", "is not defined in your submission")
ROSTER_IDS = ("canvas_id", "participant_id", "sis_user_id", "email", "username", "idnumber", "sis_login_id")
Record = dict[str, Any]  # OUT/class.json as read: plain JSON
Row = dict[str, Any]  # one student's row of the table (student_rows)
Counts = list[tuple[str, int]]  # (cause title, how many), most common first


@dataclass
class Submission:
    """One graded submission as the report and the class view read it (report.load): final scores once
    `apply_finals` ran."""
    name: str
    score: float
    steps: dict[str, float]
    seconds: float
    problems: list[Any]
    diagnosis: dict[str, Any]  # step -> its diagnosis or None
    limits: list[dict[str, Any]]
    tests: list[TestResult] = field(default_factory=list)


def read_class(out: str | Path) -> Record:
    try:
        data = json.loads((Path(out) / "class.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def apply_finals(submissions: Iterable[Submission], record: Record) -> None:
    """Give each submission its final score and steps (overrides applied), as grades.csv shows them."""
    final = record.get("final") or {}
    for submission in submissions:
        entry = final.get(submission.name)
        if entry:
            submission.score = float(entry["total"])
            submission.steps = {key: float(value) for key, value in entry["steps"].items()}


def _student_of(name, record):
    """The roster entry matched to submission `name` (the first, for a group), or {}."""
    for student in record.get("students") or []:
        if student.get("submission") == name:
            return student
    return {}


def who(name: str, record: Record) -> tuple[str, str]:
    """(display name, id) of a submission: the roster's name and id, else the LMS download's, else its name."""
    student = _student_of(name, record)
    origin = (record.get("origins") or {}).get(name) or {}
    # a group's submission grades each member who has none of their own: the report names them all
    members = [entry.get("name") for entry in record.get("students") or []
               if entry.get("submission") == name and entry.get("name")]
    display = (", ".join(members) if len(members) > 1 else student.get("name")) or origin.get("student") or name
    ident = next((student[key] for key in ROSTER_IDS if student.get(key)), "") or origin.get("key", "")
    return clean(display), clean(ident)


def not_graded(submission: Submission) -> str | None:
    """Why a file could not be graded at all (empty, binary, not a notebook, not unpacked), in the words of
    its feedback page's loading problems; None for a file that was graded. Such a file has that problem as
    the message of every check (judging.model.zero_result)."""
    errors, _ = page.loading_problems(submission.problems)
    tests = submission.tests
    if errors and tests and all(t.score == 0 and t.output.startswith(tuple(errors)) for t in tests):
        return errors[0]
    return None


def what_went_wrong(submission: Submission, maxima: Mapping[str, float]) -> list[str]:
    """Short phrases: why the file was not graded at all, or per step that lost points its diagnosed cause
    (or 'not done', or 'no known cause'), then limits hit and files that did not load."""
    why = not_graded(submission)
    if why:
        return [f"not graded: {why}"]
    phrases = []
    for key in STEP_KEYS:
        top = maxima.get(key) or 0
        if submission.steps.get(key, 0.0) >= top - 1e-9:
            continue
        tests = [t for t in submission.tests if t.step == key]
        lost = [t for t in tests if not t.passed]
        found = (submission.diagnosis or {}).get(key)
        if lost and len(lost) == len(tests) and all(any(m in t.output for m in NOT_DONE) for t in lost):
            phrases.append(f"{key}: not done")
        elif found:
            phrases.append(f"{key}: {found.get('title') or CAUSES[found['cause']].title}")
        elif lost:
            phrases.append(f"{key}: {len(lost)} check(s) failed, no known cause")
        else:
            phrases.append(f"{key}: overridden")
    for limit in submission.limits:
        kind = Limit.parse(limit.get("kind"))
        phrases.append(f"{limit.get('step')}: {kind.words if kind else limit.get('kind')}")
    return phrases


def student_rows(submissions: Iterable[Submission], record: Record, maxima: Mapping[str, float]) -> list[Row]:
    """One dict per submission, in name order: who, id, total, steps, late, what went wrong, overrides."""
    final = record.get("final") or {}
    rows = []
    for submission in sorted(submissions, key=lambda s: s.name):
        display, ident = who(submission.name, record)
        entry = final.get(submission.name) or {}
        rows.append({"submission": submission.name, "name": display, "id": ident, "total": submission.score,
                     "steps": dict(submission.steps), "late": entry.get("late"),
                     "wrong": what_went_wrong(submission, maxima), "overrides": entry.get("overrides") or [],
                     "load_errors": bool(submission.problems) and not not_graded(submission)})
    return rows


def not_submitted(record: Record) -> list[tuple[str, str]]:
    """The roster students with no submission: [(name, id)]."""
    return [(clean(student.get("name") or ""),
             clean(next((student[key] for key in ROSTER_IDS if student.get(key)), "")))
            for student in record.get("students") or [] if not student.get("submission")]


def check_causes(submissions: Iterable[Submission]) -> dict[str, Counts]:
    """{check name: [(cause title, count)]}: the diagnosed cause behind each failure of each check."""
    found: dict[str, dict[str, int]] = {}
    for submission in submissions:
        refused = not_graded(submission)
        for test in submission.tests:
            if test.passed:
                continue
            if refused:
                counts = found.setdefault(test.name, {})
                counts["file not graded"] = counts.get("file not graded", 0) + 1
                continue
            cause, _ = diagnosis.evidence_of(diagnosis.as_record(test))
            if cause is None:
                step_cause = (submission.diagnosis or {}).get(test.step)
                cause = step_cause["cause"] if step_cause else None
            title = CAUSES[cause].title if cause in CAUSES else "no known cause"
            counts = found.setdefault(test.name, {})
            counts[title] = counts.get(title, 0) + 1
    return {name: sorted(counts.items(), key=lambda item: -item[1]) for name, counts in found.items()}


def step_causes(submissions: Iterable[Submission]) -> dict[str, Counts]:
    """{step: [(cause title, count)]}: the causes diagnosed for each step, most common first."""
    found: dict[str, dict[str, int]] = {}
    for submission in submissions:
        for step, diagnosed in (submission.diagnosis or {}).items():
            if diagnosed:
                counts = found.setdefault(step, {})
                title = diagnosed.get("title") or CAUSES[diagnosed["cause"]].title
                counts[title] = counts.get(title, 0) + 1
    return {step: sorted(counts.items(), key=lambda item: -item[1]) for step, counts in found.items()}


def causes_text(pairs: Counts, limit: int = 2) -> str:
    return "; ".join(f"{title} ({count})" for title, count in pairs[:limit]) + (
        f"; {len(pairs) - limit} more" if len(pairs) > limit else "")


# --- HTML --------------------------------------------------------------------------------------------------------
def _link(name, out):
    page = Path(out) / "feedback" / f"{name}.html"
    return f"<a href='{esc('feedback/' + quote(name) + '.html')}'>{esc(name)}</a>" if page.is_file() else esc(name)


def students_section(rows: Sequence[Row], maxima: Mapping[str, float], out: str | Path) -> str:
    """The per-student table (final scores; overridden steps and totals marked with *)."""
    with_late = any(row["late"] is not None for row in rows)
    head = ("<tr><th>student</th><th>id</th><th>submission</th><th>total</th>"
            + "".join(f"<th title='{esc(BY_KEY[key].title)}'>{BY_KEY[key].number}</th>" for key in STEP_KEYS)
            + ("<th>late</th>" if with_late else "") + "<th>what went wrong</th></tr>")
    body = []
    for row in rows:
        marked = {item["step"] for item in row["overrides"]}
        cells = [esc(row["name"]), esc(row["id"]), _link(row["submission"], out),
                 f"<b>{row['total']:g}</b>{'*' if 'total' in marked else ''}"]
        cells += [f"{row['steps'].get(key, 0.0):g}{'*' if key in marked else ''}" for key in STEP_KEYS]
        if with_late:
            cells.append("" if row["late"] is None else ("<b>late</b>" if row["late"] else "on time"))
        wrong = "; ".join(row["wrong"]) + (" · file partly did not load" if row["load_errors"] else "")
        cells.append(f"<small>{esc(wrong) or 'nothing'}</small>")
        body.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    total = sum(maxima.values())
    return (f"<h2 id='students'>Students ({len(rows)})</h2><p class='sub'>Final scores out of {total:g} "
            "(steps: " + ", ".join(f"{BY_KEY[key].number}. {esc(key)} /{maxima.get(key, 0):g}" for key in STEP_KEYS)
            + "); * overridden, see below.</p><table class='students'>" + head + "".join(body) + "</table>")


def unmatched(record: Record) -> list[str]:
    """The graded submissions no roster row names (none without a roster)."""
    return [clean(name) for name in record.get("unmatched") or []]


def missing_section(missing: Sequence[tuple[str, str]], strays: Sequence[str] = ()) -> str:
    """Roster students without a submission, and submissions without a roster student. With both, a row may be
    the student of a file the roster does not name: the report does not say they did not submit."""
    html = ""
    if missing:
        title = "No submission found" if strays else "Did not submit"
        html += (f"<h2 id='missing'>{title} ({len(missing)})</h2><p>"
                 + ", ".join(esc(name) + (f" <small>({esc(ident)})</small>" if ident else "")
                             for name, ident in missing) + "</p>")
    if strays:
        html += (f"<h2 id='unmatched'>Graded, but no roster row names them ({len(strays)})</h2><p>"
                 + ", ".join(esc(name) for name in strays) + "</p><p><small>Their grades are in grades.csv and in "
                 "no LMS file" + (": the students above may be theirs (see the run's notes)" if missing else "")
                 + ".</small></p>")
    return html


def overrides_section(rows: Iterable[Row]) -> str:
    listed = [(row, item) for row in rows for item in row["overrides"]]
    if not listed:
        return ""
    return ("<h2 id='overrides'>Overrides</h2><table><tr><th>student</th><th>submission</th><th>changed</th>"
            "<th>reason</th></tr>" + "".join(
                f"<tr><td>{esc(row['name'])}</td><td>{esc(row['submission'])}</td><td>{esc(item['step'])} set to "
                f"{item['points']:g}</td><td>{esc(item['reason'])}</td></tr>" for row, item in listed) + "</table>")


def summary_lines(rows: Iterable[Row], missing: Sequence[tuple[str, str]], strays: Sequence[str] = ()) -> list[str]:
    """Terminal lines that agree with the per-student table."""
    lines = []
    late = [row["submission"] for row in rows if row["late"]]
    if late:
        lines.append(f"late: {len(late)} ({', '.join(late[:5])}{', ...' if len(late) > 5 else ''})")
    overridden = [(row["submission"], item) for row in rows for item in row["overrides"]]
    if overridden:
        lines.append(f"overrides: {len(overridden)} (" + "; ".join(
            f"{name}: {item['step']} set to {item['points']:g}, {item['reason']}"
            for name, item in overridden[:5]) + ")")
    if missing:
        lines.append(f"{'no submission found' if strays else 'did not submit'}: {len(missing)} "
                     f"({'; '.join(name for name, _ in missing[:5])}{'; ...' if len(missing) > 5 else ''})")
    if strays:
        lines.append(f"graded, but no roster row names them: {len(strays)} ({', '.join(strays[:5])}"
                     f"{', ...' if len(strays) > 5 else ''})")
    return lines
