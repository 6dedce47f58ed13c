"""`nbgrader export` plugin for the attention course (copied into the course as kit_csv_export.py).

nbgrader's built-in CSV exporter joins fields with commas without quoting (a
name like "Doe, Jane" shifts every column after it), writes 0 for a student
who never submitted, and leaves out the review flags. This one writes real
CSV (UTF-8, quoted where needed), an empty score for a missing submission or one never graded, the
flags a grader must look at (needs_manual_grade, flagged, failed_tests) and a
column per step: the kit names its grade cells `<step>-...`. A name that would start a spreadsheet
formula (=, +, -, @, tab, CR) gets a leading apostrophe, as in every CSV the kit writes.
"""

import csv
import re

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin

FIELDS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
          "submitted", "raw_score", "late_submission_penalty", "score", "max_score",
          "needs_manual_grade", "flagged", "failed_tests"]


def _text(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return csv_cell(str(value))


def csv_cell(text: str) -> str:
    """grader.text.csv_cell, repeated here because this file runs inside the nbgrader course, without the
    kit (tests/kit/test_output_injection.py checks that the two agree)."""
    if text.startswith(("=", "+", "-", "@", "\t", "\r")) and not re.fullmatch(r"-?\d+(\.\d+)?", text) and text != "-":
        return "'" + text
    return text


def _step_of(grade_id):
    return grade_id.split("-", 1)[0]


class QuotedCsvExport(ExportPlugin):
    """CSV export with quoting, review flags, per-step scores and empty cells for no submission."""

    def export(self, gradebook: Gradebook) -> None:
        dest = self.to or "grades.csv"
        students = [str(item) for item in self.student]
        assignments = [str(item) for item in self.assignment]
        steps = []  # step columns in notebook order, from the grade cells' names
        for assignment in gradebook.assignments:
            for notebook in assignment.notebooks:
                for cell in notebook.grade_cells:
                    if _step_of(cell.name) not in steps and "-" in cell.name:
                        steps.append(_step_of(cell.name))
        self.log.info("Exporting grades to %s", dest)
        with open(dest, "w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream, quoting=csv.QUOTE_MINIMAL)
            writer.writerow(FIELDS + steps)
            for assignment in gradebook.assignments:
                if assignments and assignment.name not in assignments:
                    continue
                for student in gradebook.students:
                    if students and student.id not in students:
                        continue
                    writer.writerow(self._row(gradebook, assignment, student, steps))

    def _row(self, gradebook, assignment, student, steps):
        row = {"assignment": assignment.name, "duedate": assignment.duedate, "student_id": student.id,
               "last_name": student.last_name, "first_name": student.first_name, "email": student.email,
               "max_score": assignment.max_score}
        try:
            submission = gradebook.find_submission(assignment.name, student.id)
        except MissingEntry:  # never a silent zero: an empty score says "nothing was submitted"
            row["submitted"] = False
            return [_text(row.get(key)) for key in FIELDS] + [""] * len(steps)
        if any(grade.auto_score is None and grade.manual_score is None
               for notebook in submission.notebooks for grade in notebook.grades):
            # collected but never graded (autograde failed: a kernel that died): no score is known, and a zero
            # here would be imported as one (a blind reviewer saw 0 with failed_tests=no)
            row.update(submitted=True, timestamp=submission.timestamp, needs_manual_grade=True)
            return [_text(row.get(key)) for key in FIELDS] + [""] * len(steps)
        penalty = submission.late_submission_penalty or 0.0
        row.update(submitted=True, timestamp=submission.timestamp, raw_score=submission.score,
                   late_submission_penalty=penalty, score=max(0.0, submission.score - penalty),
                   needs_manual_grade=bool(submission.needs_manual_grade),
                   flagged=any(notebook.flagged for notebook in submission.notebooks),
                   failed_tests=any(notebook.failed_tests for notebook in submission.notebooks))
        by_step = {step: 0.0 for step in steps}
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                step = _step_of(grade.name)
                if step in by_step:
                    by_step[step] += grade.score or 0.0
        return [_text(row.get(key)) for key in FIELDS] + [_text(by_step[step]) for step in steps]
