"""Who a downloaded submission belongs to: Canvas and Moodle bulk downloads, Gradescope exports.

Each LMS names the files of its "download all submissions" zip after the student:

* Canvas (canvas-lms lib/content_zipper.rb): `<name>[_LATE]_<user id>_<file id>_<uploaded name>`, where
  <name> is the student's sortable name lower-cased with every non-word character removed ("Doe, Jane"
  -> "doejane"), or the group's name for a group assignment graded as a group (the user id is then the
  group's representative); `LATE` marks a late submission. Anonymous grading writes
  `[LATE_]anon_<anonymous id>_<file id>_<uploaded name>`. Online text and URL entries come as
  `<name>[_LATE]_<user id>_text.html` / `_link.html`. A resubmitted file keeps its name unless the
  student's files already held one: Canvas then appends `-1`, `-2` (`attention-1.py`).
* Moodle (mod/assign/classes/downloader.php): one folder per student and submission plugin,
  `<Full Name>_<participant id>_assignsubmission_file/<uploaded name>` (Moodle 3.1 and later; older
  versions end the folder name with `_`), or flat files `<Full Name>_<participant id>_assignsubmission_file_
  <uploaded name>` when "download submissions in folders" is off. The participant id is the number in
  the grading worksheet's `Identifier` column ("Participant 123456"). Blind marking writes `Participant`
  for the name; team submissions `<group name>_<group id>`. Online text comes as
  `..._assignsubmission_onlinetext/onlinetext.html`: not code, so it is ignored with a note.
* Gradescope: one folder per submission; `submission_metadata.yml` names its submitters.

`submissions.collect` uses these to name each submission by its student and to keep where it came
from (`Origin`: the LMS, its id for the student, the display name, late or not), so that grades.csv,
the report and the LMS gradebook files find the right student. Every name goes through
`grader.text.safe_name` (the submission's key) or `grader.text.clean` (the display name).
"""

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from grader.text import clean, safe_name

CANVAS_FILE = re.compile(r"^(?P<student>.+?)(?P<late>_late)?_(?P<user_id>\d+)_(?P<submission_id>\d+)"
                         r"_(?P<original>.+)$", re.IGNORECASE)
CANVAS_ANONYMOUS = re.compile(r"^(?P<late>late_)?anon_(?P<anonymous_id>[A-Za-z0-9]+)_(?P<submission_id>\d+)"
                              r"_(?P<original>.+)$", re.IGNORECASE)
CANVAS_ONLINE = re.compile(r"^(?P<student>.+?)(?:_late)?_(?P<user_id>\d+)_(?:text|link)\.html$", re.IGNORECASE)
MOODLE_FOLDER = re.compile(r"^(?P<who>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
MOODLE_FILE = re.compile(r"^(?P<who>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<original>.+)$")
GRADESCOPE_METADATA = "submission_metadata.yml"


@dataclass(frozen=True)
class Origin:
    """Where a submission came from, as its LMS named it (kept in OUT/class.json)."""
    lms: str  # "canvas", "moodle" or "gradescope"
    key: str  # the LMS's id: Canvas user id, Moodle participant id, Gradescope SIDs joined by '+'
    student: str  # the name the download shows: Canvas's "lastfirst" or group name, Moodle's full name
    late: object = None  # True or False where the download says, None where it does not
    original: str = ""  # the file name the student uploaded

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CanvasFile:
    student: str  # Canvas's lower-case "lastfirst" (or the group's name)
    user_id: str  # Canvas user ID: the `ID` column of the gradebook (an anonymous id when anonymised)
    submission_id: str  # the uploaded file's id (Canvas names it after the attachment)
    original: str  # the name the student uploaded
    late: bool

    @property
    def name(self) -> str:
        """The submission's name in grades.csv; its `_USERID` end finds the roster row."""
        return safe_name(f"{self.student}_{self.user_id}")

    def origin(self) -> Origin:
        return Origin("canvas", self.user_id, clean(self.student), self.late, clean(self.original))


CANVAS_TAIL = re.compile(r"(?P<late>_late)?_(?P<user_id>\d+)_(?P<submission_id>\d+)_(?P<original>.+)$", re.IGNORECASE)


def parse_canvas_name(filename: str) -> CanvasFile | None:
    """A Canvas bulk-download file name, parsed (its first reading, see `canvas_readings`); None for any
    other name."""
    readings = canvas_readings(filename)
    return readings[0] if readings else None


def canvas_readings(filename: str) -> list[CanvasFile]:
    """Every way a Canvas file name can be read, the usual one (the shortest name part) first. There can be
    several: the name part keeps word characters, so a student's (or a group's) name may itself hold
    `_<digits>_<digits>`, and so may the uploaded file's name."""
    name = Path(filename).name
    match = CANVAS_ANONYMOUS.match(name)
    if match:
        return [CanvasFile("anon", match["anonymous_id"], match["submission_id"], match["original"],
                           bool(match["late"]))]
    readings: list[CanvasFile] = []
    for start in range(1, len(name)):
        match = CANVAS_TAIL.match(name, start) if name[start] == "_" else None
        if match and not (match["late"] is None and name[:start].lower().endswith("_late") and readings
                          and readings[-1].student == name[:start - 5]):  # the same reading, without _LATE
            readings.append(CanvasFile(name[:start], match["user_id"], match["submission_id"], match["original"],
                                       bool(match["late"])))
    return readings


def resolve_canvas(filenames: list[str]) -> dict[str, CanvasFile]:
    """{file name: CanvasFile} for the files of one Canvas download, each read the way that fits the others.

    All files of one student carry the same name part, so one user id under two name parts is a clash: a
    name holding `_<digits>_<digits>` read too early claims another student's id. Each clashing file whose
    name can be read another way takes the first other reading whose id no other name part claims. What
    still clashes is left as read (`canvas_clashes` lists it): the files are graded apart, never merged."""
    readings = {name: canvas_readings(name) for name in filenames}
    chosen = {name: found[0] for name, found in readings.items() if found}
    for _ in range(len(chosen)):
        clashing = canvas_clashes(chosen)
        moved = False
        for name, reading in chosen.items():
            if reading.user_id not in clashing:
                continue
            claims = _claims(chosen)
            for other in readings[name][readings[name].index(reading) + 1:]:
                if claims.get(other.user_id, {other.student}) == {other.student}:
                    chosen[name], moved = other, True
                    break
            if moved:
                break
        if not moved:
            break
    return chosen


def _claims(chosen):
    claims: dict[str, set[str]] = {}
    for reading in chosen.values():
        claims.setdefault(reading.user_id, set()).add(reading.student)
    return claims


def canvas_clashes(chosen: dict[str, CanvasFile]) -> dict[str, set[str]]:
    """{user id: name parts} of the ids that files read as `chosen` claim under more than one name part."""
    return {key: students for key, students in _claims(chosen).items() if len(students) > 1}


def canvas_online_entry(filename: str) -> bool:
    """True for a Canvas online text or URL entry (`..._text.html`, `..._link.html`): not code."""
    return bool(CANVAS_ONLINE.match(Path(filename).name))


@dataclass(frozen=True)
class MoodleEntry:
    student: str  # the full name (or "Participant", or the team's name)
    participant_id: str  # the grading worksheet's "Participant <id>" (a group id for team submissions)
    plugin: str  # "file", "onlinetext", ...
    original: str = ""  # the uploaded file's name, for a flat download

    @property
    def name(self) -> str:
        return safe_name(f"{self.student}_{self.participant_id}")

    def origin(self, original: str = "") -> Origin:
        return Origin("moodle", self.participant_id, clean(self.student), None, clean(original or self.original))


def parse_moodle_folder(name: str) -> MoodleEntry | None:
    """A Moodle per-student folder name (`Jane Doe_123456_assignsubmission_file`), parsed; else None."""
    match = MOODLE_FOLDER.match(Path(name).name)
    return MoodleEntry(match["who"], match["id"], match["plugin"]) if match else None


def parse_moodle_file(name: str) -> MoodleEntry | None:
    """A flat Moodle download file name (`Jane Doe_123456_assignsubmission_file_attention.py`); else None."""
    match = MOODLE_FILE.match(Path(name).name)
    return MoodleEntry(match["who"], match["id"], match["plugin"], match["original"]) if match else None


def gradescope_submitters(metadata_path: str | Path) -> dict[str, list[dict[str, str]]]:
    """{submission folder: [{"name", "sid", "email"}...]} from a Gradescope export's metadata."""
    import yaml  # only exports need it (requirements-publish.txt)

    with open(metadata_path, encoding="utf-8") as stream:
        data = yaml.safe_load(stream) or {}
    folders = {}
    for folder, record in data.items():
        people = (record or {}).get(":submitters") or []
        folders[str(folder)] = [{key: str(person.get(f":{key}") or "").strip() for key in ("name", "sid", "email")}
                                for person in people if isinstance(person, dict)]
    return folders


def gradescope_name(submitters: list[dict[str, str]]) -> str:
    """A submission's name from its submitters: each one's SID (else email, else name), joined by '+'."""
    return "+".join(safe_name(person["sid"] or person["email"] or person["name"]) for person in submitters)


def gradescope_origin(submitters: list[dict[str, str]]) -> Origin:
    return Origin("gradescope", gradescope_name(submitters),
                  clean(" + ".join(person["name"] or person["email"] or person["sid"] for person in submitters)))
