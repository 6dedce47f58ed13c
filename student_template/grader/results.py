"""Write what grading found: Gradescope-format results.json, grades.csv, a score table."""

import csv
import io
import json
import os
import tempfile
from pathlib import Path

from . import feedback
from .steps import STEP_KEYS, step_of_test_name


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
            "problems": list(result.problems),
            "fingerprint": result.fingerprint,
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


def results_text(result, maxima):
    return json.dumps(gradescope_json(result, maxima), indent=2, ensure_ascii=False) + "\n"


def write_results_json(result, maxima, path):
    write_atomic(path, results_text(result, maxima))


def read_results_json(path):
    """A SubmissionResult back from a results.json this grader wrote (to resume or merge runs)."""
    return parse_results_text(Path(path).read_text(encoding="utf-8"), Path(path).stem)


def parse_results_text(text, name):
    """A SubmissionResult from the text of a results.json this grader wrote (`name` if it names none)."""
    from .judge import SubmissionResult, TestResult

    data = json.loads(text)
    extra = data.get("extra_data") or {}
    result = SubmissionResult(extra.get("submission") or name, "")
    result.tests = [TestResult(t["name"], step_of_test_name(t["name"]), float(t["score"]), float(t["max_score"]),
                               t.get("output", ""), t.get("visibility", "visible"), t.get("extra_data") or {})
                    for t in data["tests"]]
    result.problems = list(extra.get("problems") or [])
    result.seconds = float(extra.get("seconds") or 0.0)
    result.fingerprint = extra.get("fingerprint") or ""
    result.text = text  # exactly what was written, to restore it byte for byte
    return result


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
