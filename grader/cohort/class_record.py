"""OUT/class.json: what an OUT folder knows about its class beyond each submission's results.json.

    source        the file, folder or zip `grade` was given (absolute), so that `regrade` can read it again
    zip_encoding  the code page for zip names that are not UTF-8, if one was given
    origins       {submission: {lms, key, student, late, original}} for LMS downloads (see lms_names)
    roster        {"file", "text"}: the roster CSV as given, so a regrade rewrites the LMS files without it
    overrides     the instructor's overrides as read (see overrides), applied to every class file
    override_files {submission: digest of the file its overrides stand for}: another file asks first
and, written with the class files (grades.csv, LMS files, report):
    students      the roster's students, each with the submission matched to it (None: no submission found)
    unmatched     the submissions no roster row names (graded, in grades.csv, in no LMS file)
    final         {submission: {steps, total, overrides, late}}: the scores every class file shows
    notes         what the instructor was told while writing them

Plain JSON, read by the report (which imports nothing from here) and by `merge` and `regrade`.

OUT/grade.unfinished.json says that a grade began and has not written its class files: a stop while it grades
leaves it, and `report` and `regrade` refuse until the same grade has run to its end.

OUT/class.pending.json is the journal of a run whose verdicts are ready but whose class files are not all
written yet: {"names": the class's submissions, "record": the class record to write}, and for a regrade
"regrade": its name, the new verdict waiting in OUT/.regrade/results/<name>.json (until it is there, the old
results file and the class files stay as they were). `grade` writes one before the class files, a regrade once
its verdict is staged; every command on OUT (report, regrade, grade, merge) first finishes what a journal
names (moves a staged verdict in, writes the class files, removes the journal), so a stop at any moment
leaves either the class as it was or a state the next command completes, never grades.csv of one run beside
class.json or the LMS files of another.
"""

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from grader.cohort.overrides import Override, final_scores, resolve
from grader.outfiles import write_atomic
from grader.results import SubmissionResult

RECORD = "class.json"
Record = dict[str, Any]  # class.json as read: plain JSON


def read_record(out: str | Path) -> Record:
    """OUT's class record, or {} when there is none (an OUT from an older kit, or a single file)."""
    path = Path(out) / RECORD
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_record(out: str | Path, record: Record) -> None:
    write_atomic(Path(out) / RECORD, json.dumps(record, indent=1, ensure_ascii=False, sort_keys=True) + "\n")


PENDING = "class.pending.json"
STAGING = ".regrade"  # OUT/.regrade/results/<name>.json: a regrade's verdict before it is recorded


def staged_result(out: str | Path, name: str) -> Path:
    return Path(out) / STAGING / "results" / f"{name}.json"


def write_pending(out: str | Path, names: list[str], record: Record, regrade: str | None = None) -> None:
    """Journal the class files of `names` about to be written from `record`, after a regrade of `regrade`
    whose verdict is staged, if given (see the module's docstring)."""
    pending: dict[str, Any] = {"names": names, "record": record}
    if regrade is not None:
        pending["regrade"] = regrade
    write_atomic(Path(out) / PENDING, json.dumps(pending, ensure_ascii=False) + "\n")


def read_pending(out: str | Path) -> dict[str, Any] | None:
    """The journal of class files left unwritten in OUT, or None. ValueError for one that cannot be read."""
    path = Path(out) / PENDING
    if not path.is_file():
        return None
    try:
        pending = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read ({error})") from None
    if not (isinstance(pending, dict) and isinstance(pending.get("record"), dict)
            and isinstance(pending.get("regrade", ""), str)
            and isinstance(pending.get("names"), list) and all(isinstance(name, str) for name in pending["names"])):
        raise ValueError(f"{path} is not a class-files journal of this grader")
    return pending


def clear_pending(out: str | Path) -> None:
    """The class files are written: no journal, and no grade left unfinished (mark_unfinished)."""
    (Path(out) / PENDING).unlink(missing_ok=True)
    (Path(out) / UNFINISHED).unlink(missing_ok=True)


UNFINISHED = "grade.unfinished.json"


def mark_unfinished(out: str | Path, command: str = "grade") -> None:
    """Say that a grade (or a merge) is under way in OUT: until its class files are written (then clear_pending
    removes this too), OUT's results are part this run's and part an earlier one's, and no report or regrade may
    read them as one class. The file says which command, for the message that asks to run it again."""
    write_atomic(Path(out) / UNFINISHED, json.dumps({"command": command}) + "\n")


def unfinished(out: str | Path) -> bool:
    return (Path(out) / UNFINISHED).is_file()


def unfinished_command(out: str | Path) -> str:
    """The command whose run left OUT unfinished ("grade" for a mark of an older kit, or an unreadable one)."""
    try:
        found = json.loads((Path(out) / UNFINISHED).read_text(encoding="utf-8")).get("command")
    except (OSError, ValueError, AttributeError):
        return "grade"
    return found if found in ("grade", "merge") else "grade"


def is_class_out(out: str | Path) -> bool:
    """True when OUT holds a graded class (its results/ folder or class record)."""
    out = Path(out)
    return (out / RECORD).is_file() or (out / "results").is_dir()


def overrides_of(record: Record) -> list[Override]:
    return [Override(**item) for item in record.get("overrides") or []]


def aliases_of(record: Record) -> dict[str, str | None]:
    """{roster identifier or name: submission} for overrides that name a student rather than a file; None
    for a name or identifier that several students share (never the first one's, in silence)."""
    aliases: dict[str, str | None] = {}
    for student in record.get("students") or []:
        if student.get("submission"):
            for key, value in student.items():
                if key not in ("submission", "late", "section", "group") and isinstance(value, str) and value:
                    if aliases.setdefault(value, student["submission"]) != student["submission"]:
                        aliases[value] = None
    return aliases


def members_of(record: Record) -> dict[str, list[str]]:
    """{submission: [its students' names]} for the submissions that grade several roster students (a group's)."""
    members: dict[str, list[str]] = {}
    for student in record.get("students") or []:
        if student.get("submission"):
            members.setdefault(student["submission"], []).append(student.get("name") or "?")
    return {name: names for name, names in members.items() if len(names) > 1}


def absent_of(record: Record) -> set[str]:
    """The roster identifiers and names of the students without a submission (an override cannot apply)."""
    return {value for student in record.get("students") or [] if not student.get("submission")
            for key, value in student.items()
            if key not in ("submission", "late", "section", "group") and isinstance(value, str) and value}


def late_of(name: str, record: Record) -> bool | None:
    """True or False when the LMS download or the roster says whether `name` was late, else None."""
    origin = (record.get("origins") or {}).get(name) or {}
    if origin.get("late") is not None:
        return bool(origin["late"])
    for student in record.get("students") or []:
        if student.get("submission") == name and student.get("late") is not None:
            return bool(student["late"])
    return None


def finals(results: Iterable[SubmissionResult], record: Record) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """({submission: final scores}, notes): every result with its overrides applied and its late flag."""
    found, notes = resolve(overrides_of(record), [result.name for result in results], aliases_of(record),
                           absent_of(record), members_of(record))
    scores = {}
    for result in results:
        scores[result.name] = final_scores(result, found.get(result.name, ()))
        scores[result.name]["late"] = late_of(result.name, record)
        scores[result.name]["fingerprint"] = result.fingerprint  # which results file these come from (the report)
    return scores, notes
