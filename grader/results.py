"""Write what grading found: Gradescope-format results.json, grades.csv, a score table."""

import csv
import io
import json
import os
import tempfile
from pathlib import Path

from . import feedback
from .steps import STEP_KEYS


def gradescope_json(result, maxima):
    """One submission in Gradescope's results.json format (score, output, tests[])."""
    output = ""
    if result.problems:
        output = "Problems found while loading your file:\n" + "\n".join(f"- {p}" for p in result.problems)
    data = {
        "score": round(result.score, 4),
        "output": output,
        "tests": [
            {"name": t.name, "score": t.score, "max_score": t.max_score,
             "output": t.output, "visibility": t.visibility}
            for t in result.tests
        ],
        "extra_data": {
            "submission": result.name,
            "steps": {key: round(value, 4) for key, value in result.step_scores().items()},
            "max_steps": maxima,
            "seconds": round(result.seconds, 3),
        },
    }
    return feedback.finish(data, result.tests, result.problems)


def write_atomic(path, text):
    """Write a file so that readers see the old or the new content, never half of it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def write_results_json(result, maxima, path):
    write_atomic(path, json.dumps(gradescope_json(result, maxima), indent=2, ensure_ascii=False) + "\n")


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
