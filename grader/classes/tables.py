"""A class's scores as tables: grades.csv and the terminal's score table."""

import csv
import io

from grader.chapter import STEP_KEYS


def grades_csv(results):
    """One row per submission: a column per step, then the total."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(["submission", *STEP_KEYS, "total"])
    for result in sorted(results, key=lambda r: r.name):
        steps = result.step_scores()
        writer.writerow([result.name, *(f"{steps[key]:g}" for key in STEP_KEYS), f"{result.score:g}"])
    return buffer.getvalue()


def score_table(results, maxima):
    """A fixed-width table of per-step scores for the terminal."""
    headers = ["submission", *STEP_KEYS, "total"]
    rows = [["(max)", *(f"{maxima[key]:g}" for key in STEP_KEYS), f"{sum(maxima.values()):g}"]]
    for result in sorted(results, key=lambda r: r.name):
        steps = result.step_scores()
        rows.append([result.name, *(f"{steps[key]:g}" for key in STEP_KEYS), f"{result.score:g}"])
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)
