"""What grading found, as plain data: one TestResult per graded test, one SubmissionResult per file.

Free of torch (and of everything that runs student code), so that what only
reads results (merging shards, LMS exports, the report) starts fast.
"""

import math
from dataclasses import dataclass, field

from grader.chapter import STEPS
from grader.sandbox.limits import Limit


@dataclass
class TestResult:
    name: str
    step: str
    score: float
    max_score: float
    output: str
    visibility: str
    details: dict = field(default_factory=dict)  # plain data: likely cause, picture, the student's error
    limit: Limit = None  # the limit the step hit, if this failure is one


def _sum(points):
    """The total as results.json shows it (4 decimals): a step's tests share its points by weight, and a
    float sum of shares (thirds...) is 100.00000000000001 where the total is 100."""
    return round(math.fsum(points), 4)


@dataclass
class SubmissionResult:
    name: str
    path: str
    tests: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    seconds: float = 0.0
    fingerprint: str = ""  # what was graded, with what (see bulk.fingerprint): unchanged means no regrade
    sandbox: dict = field(default_factory=dict)  # the protections its worker ran under (sandbox.seal's report)
    text: str = ""  # its results.json as written or read by a class run

    @property
    def score(self):
        return _sum(test.score for test in self.tests)

    def step_scores(self):
        scores = {step.key: 0.0 for step in STEPS}
        for test in self.tests:
            scores[test.step] += test.score
        return scores


def zero_result(name, path, tests, why):
    """Zero on every test, with `why` as the message: for a file that cannot be graded at all."""
    result = SubmissionResult(name, str(path or ""), problems=[why])
    result.tests = [TestResult(t.name, t.step, 0.0, t.points, why, t.visibility) for t in tests]
    return result
