"""The course's `nbgrader export` plugin on a gradebook nbgrader made (no course run: its API alone)."""

import csv
import os
import sys
from pathlib import Path

from nbgrader.api import Gradebook

from grader.integrations.nbgrader_export import QuotedCsvExport


def test_a_submission_that_was_never_graded_exports_no_score(tmp_path, monkeypatch):
    """Blind review (round 3): a notebook whose kernel died during autograde (os._exit) was exported as a score
    of 0, zeros in every step and failed_tests=no: an import would have recorded 0 for work never graded."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")  # alembic
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gradebook:
        gradebook.add_assignment("attention")
        gradebook.add_notebook("attention", "attention")
        gradebook.add_grade_cell("masking-t1", "attention", "attention", max_score=3, cell_type="code")
        gradebook.add_student("s8", first_name="Ada", last_name="Lovelace")
        gradebook.add_submission("attention", "s8")  # collected; autograde never gave it a score
        QuotedCsvExport(to=str(tmp_path / "grades.csv"), student=[], assignment=[]).export(gradebook)
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as stream:
        row = next(csv.DictReader(stream))
    assert row["submitted"] == "yes" and row["needs_manual_grade"] == "yes"
    assert row["score"] == row["raw_score"] == row["masking"] == row["failed_tests"] == ""
