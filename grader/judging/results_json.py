"""A submission's results.json (Gradescope's format, with the kit's extra_data): written and read back."""

import json
from pathlib import Path

from grader.chapter import step_of_test_name
from grader.feedback import page as feedback
from grader.judging.model import SubmissionResult, TestResult
from grader.outfiles import write_atomic
from grader.sandbox.limits import Limit


def gradescope_json(result, maxima):
    """One submission in Gradescope's results.json format (score, output, tests[]); the output (Markdown:
    loading problems apart from the lines only left out, then each step) is written by feedback.finish."""
    data = {
        "score": round(result.score, 4),
        "output": "",
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
            "sandbox": result.sandbox,
        },
    }
    return feedback.finish(data, result.tests, result.problems)


def results_text(result, maxima):
    return json.dumps(gradescope_json(result, maxima), indent=2, ensure_ascii=False) + "\n"


def write_results_json(result, maxima, path):
    write_atomic(path, results_text(result, maxima))


def read_results_json(path):
    """A SubmissionResult back from a results.json this grader wrote (to resume or merge runs)."""
    return parse_results_text(Path(path).read_text(encoding="utf-8"), Path(path).stem)


def parse_results_text(text, name):
    """A SubmissionResult from the text of a results.json this grader wrote (`name` if it names none)."""
    data = json.loads(text)
    extra = data.get("extra_data") or {}
    result = SubmissionResult(extra.get("submission") or name, "")
    result.tests = [TestResult(t["name"], step_of_test_name(t["name"]), float(t["score"]), float(t["max_score"]),
                               t.get("output", ""), t.get("visibility", "visible"), t.get("extra_data") or {},
                               Limit.parse((t.get("extra_data") or {}).get("limit")))
                    for t in data["tests"]]
    result.problems = list(extra.get("problems") or [])
    result.seconds = float(extra.get("seconds") or 0.0)
    result.fingerprint = extra.get("fingerprint") or ""
    result.sandbox = extra.get("sandbox") or {}
    result.text = text  # exactly what was written, to restore it byte for byte
    return result
