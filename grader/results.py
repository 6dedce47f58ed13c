"""What grading found, as typed plain data, and its one serializer: results.json.

One TestResult per graded test (its step stored, not re-read from its name), one SubmissionResult per file.
`SubmissionResult.to_dict` is Gradescope's results.json (score, output, tests[]) with the kit's extra_data;
`to_json` its text and `from_json`/`from_dict` the way back, so every reader (the feedback page, the report,
the integrity signals, resuming and merging runs) reads objects, never the JSON's keys. A result read back
writes the same bytes: its numbers keep their JSON type (an int stays an int) and every key its order.

Free of torch (and of everything that runs student code), so that what only reads results starts fast; below
the feedback layer, so that feedback reads the model without importing the judge.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from grader.chapter import STEPS
from grader.sandbox.limits import Limit

Json = dict[str, Any]


class ResultsFormatError(ValueError):
    """Data that is not a results.json of this grader (a field missing or of the wrong type)."""


@dataclass
class TestResult:
    name: str
    step: str  # the chapter step's key ("masking"): test names start with it and a colon
    score: float
    max_score: float
    output: str
    visibility: str = "visible"
    details: dict[str, Any] = field(default_factory=dict)  # plain data: likely cause, picture, the student's error
    limit: Limit | None = None  # the limit the step hit, if this failure is one
    extra_data: dict[str, Any] = field(default_factory=dict)  # what results.json carries of it (feedback.page.finish)

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score

    @property
    def short_name(self) -> str:
        """The name without its step: "rows sum to one" for "masking: rows sum to one"."""
        return self.name.partition(": ")[2] or self.name

    def to_dict(self) -> Json:
        entry: Json = {"name": self.name, "score": self.score, "max_score": self.max_score, "output": self.output,
                       "visibility": self.visibility}
        if self.extra_data:
            entry["extra_data"] = dict(self.extra_data)
        return entry

    @classmethod
    def from_dict(cls, entry: Any) -> TestResult:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ResultsFormatError("a test without a name")
        extra = entry.get("extra_data") or {}
        if not isinstance(extra, dict):
            raise ResultsFormatError(f"test {entry['name']!r}: extra_data is not an object")
        name = entry["name"]
        return cls(name, name.partition(":")[0], _number(entry.get("score")), _number(entry.get("max_score")),
                   str(entry.get("output", "")), str(entry.get("visibility", "visible")), extra,
                   Limit.parse(extra.get("limit")), dict(extra))


def _number(value: Any) -> float:
    """A score as results.json has it: an int stays an int (written back as it was read), anything else fails."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultsFormatError(f"a score that is not a number: {str(value)[:40]!r}")
    return value


def _sum(points: Iterable[float]) -> float:
    """The total as results.json shows it (4 decimals): a step's tests share its points by weight, and a
    float sum of shares (thirds...) is 100.00000000000001 where the total is 100."""
    return round(math.fsum(points), 4)


@dataclass
class SubmissionResult:
    name: str
    path: str
    tests: list[TestResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # CPU seconds grading it took: {"judge": this judge's thread, "worker": its workers' processes} (make bench)
    cpu: dict[str, float] = field(default_factory=dict)
    fingerprint: str = ""  # what was graded, with what (see bulk.fingerprint): unchanged means no regrade
    sandbox: dict[str, Any] = field(default_factory=dict)  # the protections its worker ran under (sandbox.seal)
    # What the feedback adds before it is written (feedback.page.finish); empty on a result just graded:
    output: str = ""  # Gradescope's `output`: the visible feedback as Markdown
    output_format: str = ""  # "md" once finished
    max_steps: dict[str, float] = field(default_factory=dict)  # each step's points
    diagnosis: dict[str, Any] | None = None  # {step: the cause diagnosed, or None} for the steps that lost points
    limits: list[dict[str, Any]] | None = None  # [{step, kind, message}]: the limits hit

    @property
    def score(self) -> float:
        return _sum(test.score for test in self.tests)

    def step_scores(self) -> dict[str, float]:
        scores = {step.key: 0.0 for step in STEPS}
        for test in self.tests:
            if test.step in scores:
                scores[test.step] += test.score
        return scores

    def rounded_steps(self) -> dict[str, float]:
        """Each step's score as results.json shows it (4 decimals)."""
        return {key: round(value, 4) for key, value in self.step_scores().items()}

    def tests_of(self, step: str) -> list[TestResult]:
        return [test for test in self.tests if test.step == step]

    # --- results.json ------------------------------------------------------------------------------------------
    def to_dict(self) -> Json:
        """Gradescope's results.json with the kit's extra_data (the same keys, in the same order, as ever)."""
        extra: Json = {
            "submission": self.name,
            "steps": self.rounded_steps(),
            "max_steps": self.max_steps,
            "seconds": round(self.seconds, 3),
            "cpu": {side: round(value, 4) for side, value in self.cpu.items()},
            "problems": list(self.problems),
            "fingerprint": self.fingerprint,
            "sandbox": self.sandbox,
        }
        if self.diagnosis is not None:
            extra["diagnosis"] = self.diagnosis
        if self.limits is not None:
            extra["limits"] = self.limits
        data: Json = {"score": round(self.score, 4), "output": self.output,
                      "tests": [test.to_dict() for test in self.tests], "extra_data": extra}
        if self.output_format:
            data["output_format"] = self.output_format
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: Any, name: str = "") -> SubmissionResult:
        """The result a results.json dict holds (`name` if it names none); ResultsFormatError if it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
            raise ResultsFormatError("not an object with a list of tests")
        extra = data.get("extra_data") or {}
        if not isinstance(extra, dict) or isinstance(data.get("score", 0), bool) or not isinstance(
                data.get("score", 0), (int, float)):
            raise ResultsFormatError("extra_data or score of the wrong type")
        try:
            limits = extra.get("limits")
            return cls(
                str(extra.get("submission") or name), "", [TestResult.from_dict(entry) for entry in data["tests"]],
                [str(problem) for problem in extra.get("problems") or []], float(extra.get("seconds") or 0.0),
                {str(side): float(value) for side, value in dict(extra.get("cpu") or {}).items()},
                str(extra.get("fingerprint") or ""), dict(extra.get("sandbox") or {}), str(data.get("output") or ""),
                str(data.get("output_format") or ""),
                {str(key): _number(value) for key, value in dict(extra.get("max_steps") or {}).items()},
                None if extra.get("diagnosis") is None else dict(extra["diagnosis"]),
                None if limits is None else [dict(limit) for limit in limits])
        except (TypeError, ValueError, AttributeError) as error:
            raise ResultsFormatError(f"a field of the wrong type ({str(error)[:80]})") from None

    @classmethod
    def from_json(cls, text: str, name: str = "") -> SubmissionResult:
        """The result of a results.json's text: ValueError if it is no JSON, ResultsFormatError if no results."""
        return cls.from_dict(json.loads(text), name)


def as_result(data: SubmissionResult | Json) -> SubmissionResult:
    """A SubmissionResult, from one or from a results.json dict."""
    return data if isinstance(data, SubmissionResult) else SubmissionResult.from_dict(data)


def zero_result(name: str, path: object, tests: Iterable[Any], why: str) -> SubmissionResult:
    """Zero on every test, with `why` as the message: for a file that cannot be graded at all."""
    result = SubmissionResult(name, str(path or ""), problems=[why])
    result.tests = [TestResult(t.name, t.step, 0.0, t.points, why, t.visibility) for t in tests]
    return result
