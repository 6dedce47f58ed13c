"""Who a downloaded submission belongs to: Canvas bulk downloads and Gradescope exports.

A Canvas bulk download names each file `studentname_USERID_SUBMISSIONID_originalname`
(`studentname_late_...` for late work); a Gradescope export keeps one folder per
submission and names its submitters in `submission_metadata.yml`.
`submissions.collect` uses both to name each submission by its student, so the
name alone finds the roster row (`grader.integrations.lms`).
"""

import re
from dataclasses import dataclass
from pathlib import Path

from grader.text import safe_name

CANVAS_FILE = re.compile(r"^(?P<student>[^_]+?)(?P<late>_late)?_(?P<user_id>\d+)_(?P<submission_id>\d+)"
                         r"_(?P<original>.+)$", re.IGNORECASE)
GRADESCOPE_METADATA = "submission_metadata.yml"


@dataclass(frozen=True)
class CanvasFile:
    student: str  # Canvas's lower-case "lastfirst"
    user_id: str  # Canvas user ID: the `ID` column of the gradebook
    submission_id: str
    original: str  # the name the student uploaded
    late: bool

    @property
    def name(self):
        """The submission's name in grades.csv; its `_USERID` end finds the roster row."""
        return f"{self.student}_{self.user_id}"


def parse_canvas_name(filename):
    """A Canvas bulk-download file name, parsed; None for any other name."""
    match = CANVAS_FILE.match(Path(filename).name)
    if not match:
        return None
    return CanvasFile(match["student"], match["user_id"], match["submission_id"], match["original"],
                      bool(match["late"]))


def gradescope_submitters(metadata_path):
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


def gradescope_name(submitters):
    """A submission's name from its submitters: each one's SID (else email, else name), joined by '+'."""
    return "+".join(safe_name(person["sid"] or person["email"] or person["name"]) for person in submitters)
