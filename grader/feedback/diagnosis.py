"""What went wrong in a step: the fault model's rule applied to every failed check of the step.

Each failed check carries the observations of the fault model's probes (plain
data, see grader.check.causes): signature matches (the output equals what the
judge's reference gives with a known fault), property probes (row sums, the
softmax's temperature, the mask's pattern, dropout's rescaling, the module's
structure...), and the student's own crash, read by its pattern. A step's
cause is named only when exactly one known fault matches every observation of
the step (grader.check.causes.name_cause); a crash pattern, the weakest
evidence, decides only when the probes and signatures support no cause at all.
Otherwise nothing is named and the checks' messages say which property failed.
Nothing here knows a hidden expected value.
"""

import re
from collections.abc import Iterable
from typing import Any

from grader.check.causes import CAUSES, crash_cause, name_cause, observation, weigh
from grader.results import TestResult

Record = dict[str, Any]  # a test as in results.json (name, score, max_score, output, details)
Observation = dict[str, Any]  # one probe's finding (grader.check.causes.observation)

# Weight of each kind of evidence: the order in which a step's evidence is quoted.
STRENGTH = {"signature": 3, "property": 2, "crash": 1}

# Public tests' failure wording whose property has a single cause (older results carry no observations).
PROPERTY_SIGNS = (
    (re.compile(r"should be a registered buffer"), "mask_not_buffer"),
    (re.compile(r"should raise an error: \d+ features cannot be split"), "no_divisibility_check"),
    (re.compile(r"with training=False the weights must come back unchanged"), "dropout_in_eval"),
    (re.compile(r"should be an nn\.ModuleList"), "heads_not_modulelist"),
)


def describe(key: str) -> str:
    """The cause's sentence: what is wrong, then what to do."""
    cause = CAUSES[key]
    return f"{cause.title}; {cause.fix}"


def observations_of(test: Record) -> tuple[list[Observation], list[Observation]]:
    """(strong, weak): the observations one failed test carries (a dict as in results.json plus `details`):
    its probes' and signatures', and those read from its crash."""
    details = test.get("details") or {}
    strong = list(details.get("observations") or ())
    if not strong and details.get("cause"):  # results written before observations existed
        strong.append(observation("cause", details["cause"]))
    if not strong:
        for pattern, cause in PROPERTY_SIGNS:
            if pattern.search(test.get("output") or ""):
                strong.append(observation("cause", cause))
    weak = [seen for seen in strong if seen.get("probe") == "crash"]
    strong = [seen for seen in strong if seen.get("probe") != "crash"]
    if details.get("error"):
        cause = crash_cause(details["error"])
        if cause:
            weak.append(observation("crash", cause))
    return strong, weak


def rule(strong: list[Observation], weak: list[Observation]) -> str | None:
    """The cause to name (grader.check.causes.name_cause: crash patterns count only when nothing else
    supports a cause)."""
    return name_cause(strong + weak)


def evidence_of(test: Record) -> tuple[str | None, int]:
    """(cause, strength) of one failing test on its own, or (None, 0)."""
    strong, weak = observations_of(test)
    cause = rule(strong, weak)
    if not cause:
        return None, 0
    kind = (test.get("details") or {}).get("kind")
    if kind in STRENGTH and strong:
        return cause, STRENGTH[kind]
    return cause, STRENGTH["property"] if strong else STRENGTH["crash"]


def diagnose_step(tests: Iterable[Record]) -> Record | None:
    """The step's cause from its failing tests: {cause, title, fix, evidence, test} or None. The evidence quotes
    the failed checks that speak for the cause, the most telling first (a row sum says more than "outputs
    differ")."""
    failing = [test for test in tests if test["score"] < test["max_score"]]
    strong, weak = [], []
    for test in failing:
        more_strong, more_weak = observations_of(test)
        strong += more_strong
        weak += more_weak
    best = rule(strong, weak)
    if not best:
        return None
    support = []
    for test in failing:
        test_strong, test_weak = observations_of(test)
        if best in weigh(test_strong + test_weak)[0]:
            kind = (test.get("details") or {}).get("kind") or ""
            strength = STRENGTH.get(kind, STRENGTH["property"]) if test_strong else STRENGTH["crash"]
            support.append((strength, test))
    # Properties first (they state what is wrong with the output), then signatures, then crashes.
    ranked = sorted(support, key=lambda item: (item[0] != STRENGTH["property"], -item[0]))
    clauses, kinds = [], set()
    for strength, test in ranked:  # at most one observation of each kind of evidence
        clause = first_clause(test.get("output") or "")
        if clause and strength not in kinds:
            clauses.append(clause)
            kinds.add(strength)
        if len(clauses) == 2:
            break
    cause = CAUSES[best]
    return {"cause": best, "title": cause.title, "fix": cause.fix,
            "test": ranked[0][1]["name"] if ranked else failing[0]["name"], "evidence": "; ".join(clauses)}


def diagnose(tests: Iterable[TestResult | Record]) -> dict[str, Record | None]:
    """{step: diagnosis or None} for the steps that lost points; `tests` are TestResults or
    results.json entries (with the per-test `extra_data` this grader writes)."""
    records: dict[str, list[Record]] = {}
    failed_steps: list[str] = []
    for test in tests:
        record = as_record(test)
        step = record["name"].partition(":")[0]
        records.setdefault(step, []).append(record)
        if record["score"] < record["max_score"] and step not in failed_steps:
            failed_steps.append(step)
    return {step: diagnose_step(records[step]) for step in failed_steps}


def as_record(test: TestResult | Record) -> Record:
    """A test result as a plain dict: name, score, max_score, output, visibility, details."""
    if isinstance(test, dict):
        record = dict(test)
        record.setdefault("details", test.get("extra_data") or {})
        return record
    return {"name": test.name, "score": test.score, "max_score": test.max_score, "output": test.output,
            "visibility": test.visibility, "details": getattr(test, "details", None) or {}}


def first_clause(message: str, limit: int = 240) -> str:
    """The observation at the start of a failure message, before its advice: the first line, up to the
    first "; " outside parentheses, shortened."""
    text = message.split("\n", 1)[0]
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(char, 0)
        if depth == 0 and text.startswith("; ", index):
            text = text[:index]
            break
    return text if len(text) <= limit else text[: limit - 1] + "…"
