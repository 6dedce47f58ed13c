"""A submission's results.json (Gradescope's format, with the kit's extra_data): written and read back.

The format itself is the result model's (grader.results: `to_json`/`from_json`); here the feedback is added
before writing (feedback.page.finish) and a result read back is checked to be one this grader can resume."""

from pathlib import Path

from grader.chapter import step_of_test_name
from grader.feedback import page as feedback
from grader.outfiles import write_atomic
from grader.results import SubmissionResult


def finished(result: SubmissionResult, maxima: dict[str, float]) -> SubmissionResult:
    """`result` as results.json has it: a copy with its feedback (causes, pictures, diagnosis, Markdown)."""
    return feedback.finish(result, maxima)


def gradescope_json(result: SubmissionResult, maxima: dict[str, float]) -> dict:
    """One submission in Gradescope's results.json format (score, output, tests[]), feedback included."""
    return finished(result, maxima).to_dict()


def results_text(result: SubmissionResult, maxima: dict[str, float]) -> str:
    return finished(result, maxima).to_json()


def write_results_json(result: SubmissionResult, maxima: dict[str, float], path: Path | str) -> None:
    write_atomic(path, results_text(result, maxima))


def read_results_json(path: Path | str) -> SubmissionResult:
    """A SubmissionResult back from a results.json this grader wrote (to resume or merge runs)."""
    return parse_results_text(Path(path).read_text(encoding="utf-8"), Path(path).stem)


def parse_results_text(text: str, name: str) -> SubmissionResult:
    """A SubmissionResult from the text of a results.json this grader wrote (`name` if it names none);
    ValueError for any other text, a test of no chapter step included. It writes back the same bytes."""
    result = SubmissionResult.from_json(text, name)
    for test in result.tests:
        step_of_test_name(test.name)  # ValueError: not a test of this chapter
    return result
