"""nbgrader plugins of the attention course (copied into the course as kit_nbgrader.py by `make publish`).

KitCollector: who a file of an LMS download belongs to, for `nbgrader zip_collect`. nbgrader's own
collector needs a regular expression that nothing in the course provides, and without one it
collects nothing and still exits 0. This one recognises:
  * one folder per student, named by the nbgrader student id:   <student id>/attention.ipynb
    (also one zip per student named by the id: <student id>.zip holding attention.ipynb);
  * a Canvas bulk download: <name>[_LATE]_<Canvas user id>_<file id>_attention.ipynb, where the student
    id is the Canvas user id (import students with those ids: the `ID` column of the gradebook export).
Whatever a student named their notebook (`attention-1.ipynb` as Canvas renames a resubmission, `attention (1).ipynb`,
`Attention_Lee.ipynb`), it is collected as the assignment's (`KitCollector.notebook`, set by nbgrader_config.py):
autograde finds no other name, and said "No notebooks found" for those students. Where a student's download
holds several notebooks only the latest is collected (the highest Canvas file id, then the highest copy number,
then the exact name), the others skipped with a line that names it: nbgrader would otherwise stop at "Duplicate
submission file. No timestamps for comparison". A .py is skipped with a line saying how to grade it (nbgrader
grades notebooks; `make grade` grades both).

QuietOverwriteCells: nbgrader's OverwriteCells, minus one warning per hidden-test cell per notebook.
The released notebook never holds the hidden tests (ClearHiddenTests removed them), so every hidden
cell's checksum differs from the gradebook's and nbgrader warns "Attribute 'checksum' for cell ... has
changed!" before restoring the tests: 38 warnings per notebook that say nothing. This prints one line
per notebook saying how many were restored, and still warns for any other change (a student who edited
a check cell).
"""

import os
import re
from typing import Any

from nbgrader.plugins import FileNameCollectorPlugin
from nbgrader.preprocessors import OverwriteCells
from traitlets import Unicode

# Canvas renames a resubmitted notebook `attention-1.ipynb`... `-7`, then `attention-<uuid>.ipynb` (a later copy
# than any numbered one: before, it was collected as a notebook of another name, and an older copy was graded).
COPY = r"\d+|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"
LAST_NUMBERED_COPY = 7
CANVAS = re.compile(r"^.+?(?:_late)?_(?P<student_id>\d+)_(?P<upload>\d+)_(?P<file_id>.+?)(?:-(?P<copy>" + COPY + r"))?"
                    r"(?P<ext>\.ipynb)$", re.IGNORECASE)
RESUBMITTED = re.compile(r"^(?P<stem>.+?)-(?P<copy>" + COPY + r")(?P<ext>\.ipynb)$", re.IGNORECASE)
BEGIN, END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"


class KitCollector(FileNameCollectorPlugin):
    """Student id and notebook from a file's folder (one per student) or its Canvas download name."""

    notebook = Unicode("", help="the assignment's notebook: every student's notebook is collected under this name "
                                "(empty: under its own)").tag(config=True)

    def collect(self, submitted_file: str) -> dict[str, str] | None:
        if os.path.splitext(submitted_file)[1] == ".py":
            self.log.warning("Skipped %s: a .py file, and nbgrader grades the notebook; grade .py submissions "
                             "with `make grade SUBMISSION=<the download>` (it grades both)",
                             os.path.basename(submitted_file))
            return None
        if os.path.splitext(submitted_file)[1] not in self.valid_ext:
            return None
        found = self.owner(submitted_file)
        if found is None:
            self.log.warning("Skipped %s: put each student's notebook in a folder named by their student id",
                             os.path.basename(submitted_file))
            return None
        later = self.later_copy(submitted_file, found)
        if later is not None:
            self.log.warning("Skipped %s: %s is a later upload of the same notebook by student %s",
                             os.path.basename(submitted_file), os.path.basename(later), found[0])
            return None
        return {"student_id": found[0], "file_id": self.notebook or found[1]}

    @staticmethod
    def owner(submitted_file: str) -> tuple[str, str, tuple[int, int]] | None:
        """(student id, notebook name, upload order) of a file, or None where nothing says whose it is."""
        name = os.path.basename(submitted_file)
        canvas = CANVAS.match(name)
        if canvas:
            return (canvas["student_id"], canvas["file_id"] + canvas["ext"],
                    (int(canvas["upload"]), copy_number(canvas["copy"])))
        folder = os.path.basename(os.path.dirname(submitted_file))
        if folder in ("", "extracted", "archive"):
            return None
        resubmitted = RESUBMITTED.match(name)
        if resubmitted:
            return folder, resubmitted["stem"] + resubmitted["ext"], (0, copy_number(resubmitted["copy"]))
        return folder, name, (0, 0)

    def later_copy(self, submitted_file: str, found: tuple[str, str, tuple[int, int]]) -> str | None:
        """Another file beside this one that is the same student's same notebook, uploaded later."""
        folder = os.path.dirname(submitted_file)
        for other in sorted(os.listdir(folder or ".")):
            path = os.path.join(folder, other)
            if path == submitted_file or os.path.splitext(other)[1] not in self.valid_ext:
                continue
            theirs = self.owner(path)
            if theirs is not None and self.same_notebook(theirs, found) and (
                    self.order(theirs, other) > self.order(found, os.path.basename(submitted_file))):
                return path
        return None

    def same_notebook(self, one: tuple[str, str, tuple[int, int]], other: tuple[str, str, tuple[int, int]]) -> bool:
        """Whether two files are the same student's, collected under one name."""
        return one[0] == other[0] and (bool(self.notebook) or one[1] == other[1])

    def order(self, found: tuple[str, str, tuple[int, int]], name: str) -> tuple[Any, ...]:
        """Upload order, then the assignment's own name before another (`attention.ipynb` over `notes.ipynb`
        in one student's folder), then the name."""
        return found[2], found[1] == self.notebook, name


def copy_number(mark: str | None) -> int:
    """The order of a copy mark: none 0, `-1`... `-7` as numbered, a uuid after all of them."""
    if not mark:
        return 0
    return int(mark) if mark.isdigit() else LAST_NUMBERED_COPY + 1


def released_form(source: str) -> str:
    """A check cell's source as the release holds it: the hidden-test region (and its markers) removed."""
    lines, hidden = [], False
    for line in source.split("\n"):
        if BEGIN in line:
            hidden = True
        elif END in line:
            hidden = False
        elif not hidden:
            lines.append(line)
    return "\n".join(lines)


class QuietOverwriteCells(OverwriteCells):
    """OverwriteCells that counts the hidden-test restorations instead of warning about each."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        self._restored = 0
        nb, resources = super().preprocess(nb, resources)
        if self._restored:
            self.log.info("%s: restored the hidden tests of %d check cells (expected: the release never holds "
                          "them)", resources["nbgrader"]["notebook"], self._restored)
        return nb, resources

    def preprocess_cell(self, cell: Any, resources: dict[str, Any], cell_index: int) -> tuple[Any, dict[str, Any]]:
        self._submitted = cell.source
        return super().preprocess_cell(cell, resources, cell_index)

    def report_change(self, name: str, attr: str, old: object, new: object) -> None:
        if attr == "checksum":
            source = self.gradebook.find_source_cell(name, self.notebook_id, self.assignment_id).source
            if BEGIN in source and self._submitted.rstrip() == released_form(source).rstrip():
                self._restored += 1
                return
        super().report_change(name, attr, old, new)
