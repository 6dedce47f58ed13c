"""A class's scores as tables: grades.csv and the terminal's score table.

Both show the final scores (`class_record.finals`: overrides applied) when they are given. grades.csv
gains a `late` column when the class came from an LMS download that says who was late, and an
`override` column (what was changed, and why) when the instructor overrode a grade.
"""

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

from grader.chapter import STEP_KEYS
from grader.results import SubmissionResult
from grader.text import csv_row, terminal

Final = Mapping[str, dict[str, Any]]  # class_record.finals: {submission: {steps, total, overrides, late}}


def _scores(result, final):
    if final and result.name in final:
        entry = final[result.name]
        return entry["steps"], entry["total"]
    return result.step_scores(), result.score


def _late(entry):
    late = (entry or {}).get("late")
    return "" if late is None else ("yes" if late else "no")


def _overrides(entry):
    return "; ".join(f"{item['step']} set to {item['points']:g} ({item['reason']})"
                     for item in (entry or {}).get("overrides") or [])


def grades_csv(results: Iterable[SubmissionResult], final: Final | None = None) -> str:
    """One row per submission: a column per step, then the total (and late, override where they apply)."""
    final = final or {}
    with_late = any(entry.get("late") is not None for entry in final.values())
    with_overrides = any(entry.get("overrides") for entry in final.values())
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(["submission", *STEP_KEYS, "total"] + ["late"] * with_late + ["override"] * with_overrides)
    for result in sorted(results, key=lambda r: r.name):
        steps, total = _scores(result, final)
        entry = final.get(result.name)
        row = [result.name, *(f"{steps[key]:g}" for key in STEP_KEYS), f"{total:g}"]
        row += [_late(entry)] * with_late + [_overrides(entry)] * with_overrides
        writer.writerow(csv_row(row))
    return buffer.getvalue()


def score_table(results: Iterable[SubmissionResult], maxima: Mapping[str, float], final: Final | None = None) -> str:
    """A fixed-width table of per-step scores for the terminal (final scores, marked * where overridden)."""
    final = final or {}
    headers = ["submission", *STEP_KEYS, "total"]
    rows = [["(max)", *(f"{maxima[key]:g}" for key in STEP_KEYS), f"{sum(maxima.values()):g}"]]
    for result in sorted(results, key=lambda r: r.name):
        steps, total = _scores(result, final)
        mark = "*" if (final.get(result.name) or {}).get("overrides") else ""
        rows.append([terminal(result.name), *(f"{steps[key]:g}" for key in STEP_KEYS), f"{total:g}{mark}"])
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    if any(entry.get("overrides") for entry in final.values()):
        lines.append("* overridden by the instructor (see OUT/grades.csv and the report for the reasons)")
    return "\n".join(lines)
