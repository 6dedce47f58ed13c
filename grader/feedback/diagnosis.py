"""What most likely went wrong in a step, in the chapter's words.

All evidence is gathered in the judge, from plain data:

1. signatures: a hidden test computes with the judge's own oracle what known
   faulty versions of the reference give on its probe, and the student's output
   equals (or comes very close to) one of them (`testing.expect_close(suspects=...)`);
2. properties whose failure has one meaning (columns that sum to one, survivors
   scaled by exactly 1, the same head object repeated...), named where they are
   checked (`testing.Failure(..., cause=...)`), or, for the public tests, by the
   wording of their failure (`PROPERTY_SIGNS`);
3. the student's own crash, sent back as plain data (exception type, message and
   failing line): a mask of the wrong size, `.T` on a batch, `view` without
   `contiguous()`, a bias that does not exist...

A step's diagnosis is the cause with the most evidence behind it; no cause is
named without evidence. Nothing here knows a hidden expected value.
"""

import re

from grader.check.causes import CAUSES


# Weight of each kind of evidence when causes compete within a step.
STRENGTH = {"signature": 3, "property": 2, "crash": 1}

# Public tests' failure wording whose property has a single cause (their raise sites carry no cause).
PROPERTY_SIGNS = (
    (re.compile(r"should be a registered buffer"), "mask_not_buffer"),
    (re.compile(r"should raise an error: \d+ features cannot be split"), "no_divisibility_check"),
    (re.compile(r"with training=False the weights must come back unchanged"), "dropout_in_eval"),
    (re.compile(r"should be an nn\.ModuleList"), "heads_not_modulelist"),
)

SHAPE_CLASH = re.compile(r"must match the size of tensor|doesn't match the broadcast shape|"
                         r"Expected size for first two dimensions|shapes cannot be multiplied|size mismatch")
KEYS_TRANSPOSED = re.compile(r"\b(keys|k|key)\s*\.\s*(T\b|transpose\s*\(|permute\s*\()")
WEIGHT_TRANSPOSED = re.compile(r"\bW_\w+\s*\.\s*(T\b|t\(\))")
MASK_UNSLICED = re.compile(r"mask")
MISSING_PARAMETER = re.compile(r"^(?:heads\.\d+\.)?(W_query|W_key|W_value|out_proj)\.bias is not an nn\.Parameter"
                               r".*\(found NoneType\)")


def describe(key):
    """The cause's sentence: what is wrong, then what to do."""
    cause = CAUSES[key]
    return f"{cause.title}; {cause.fix}"


def crash_cause(error):
    """The likely cause behind a crash of the student's code (`error`: type, message, failing line)."""
    kind, message, line = error.get("type") or "", error.get("message") or "", error.get("location") or ""
    code = line.split(": ", 1)[-1] if ": " in line else line
    if kind == "InjectionError":
        found = MISSING_PARAMETER.search(message)
        if found:
            return "out_proj_bias" if found.group(1) == "out_proj" else "qkv_bias_ignored"
        return None
    if "view size is not compatible with input tensor's size and stride" in message:
        return "view_not_contiguous"
    if re.search(r"shape '\[[\d, ]+\]' is invalid for input of size", message) and "head" in code:
        return "head_dim_wrong"
    if SHAPE_CLASH.search(message):
        if KEYS_TRANSPOSED.search(code):
            return "keys_transpose"
        if WEIGHT_TRANSPOSED.search(code):
            return "weight_transposed"
        if MASK_UNSLICED.search(code) and not re.search(r"mask[^@]*\[\s*:", code):
            return "mask_not_sliced"
    return None


def evidence_of(test):
    """(cause, strength) of one failing test (a dict as in results.json plus `details`), or (None, 0)."""
    details = test.get("details") or {}
    if details.get("cause"):
        return details["cause"], STRENGTH[details.get("kind", "property")]
    if details.get("error"):
        cause = crash_cause(details["error"])
        if cause:
            return cause, STRENGTH["crash"]
    for pattern, cause in PROPERTY_SIGNS:
        if pattern.search(test.get("output") or ""):
            return cause, STRENGTH["property"]
    return None, 0


def diagnose_step(tests):
    """The step's most likely cause from its failing tests: {cause, title, fix, evidence, test} or None.
    The evidence quotes the failed properties behind the cause, the most telling first (a row sum
    says more than "outputs differ")."""
    weights, support = {}, {}
    for test in tests:
        if test["score"] >= test["max_score"]:
            continue
        cause, strength = evidence_of(test)
        if cause:
            weights[cause] = weights.get(cause, 0) + strength
            support.setdefault(cause, []).append((strength, test))
    if not weights:
        return None
    order = list(support)
    best = max(weights, key=lambda key: (weights[key], -order.index(key)))
    cause = CAUSES[best]
    # Properties first (they state what is wrong with the output), then signatures, then crashes.
    ranked = sorted(support[best], key=lambda item: (item[0] != STRENGTH["property"], -item[0]))
    clauses, kinds = [], set()
    for strength, test in ranked:  # at most one observation of each kind of evidence
        clause = first_clause(test.get("output") or "")
        if clause and strength not in kinds:
            clauses.append(clause)
            kinds.add(strength)
        if len(clauses) == 2:
            break
    return {"cause": best, "title": cause.title, "fix": cause.fix, "test": ranked[0][1]["name"],
            "evidence": "; ".join(clauses)}


def diagnose(tests):
    """{step: diagnosis or None} for the steps that lost points; `tests` are TestResults or
    results.json entries (with the per-test `extra_data` this grader writes)."""
    records, failed_steps = {}, []
    for test in tests:
        record = as_record(test)
        step = record["name"].partition(":")[0]
        records.setdefault(step, []).append(record)
        if record["score"] < record["max_score"] and step not in failed_steps:
            failed_steps.append(step)
    return {step: diagnose_step(records[step]) for step in failed_steps}


def as_record(test):
    """A test result as a plain dict: name, score, max_score, output, visibility, details."""
    if isinstance(test, dict):
        record = dict(test)
        record.setdefault("details", test.get("extra_data") or {})
        return record
    return {"name": test.name, "score": test.score, "max_score": test.max_score, "output": test.output,
            "visibility": test.visibility, "details": getattr(test, "details", None) or {}}


def first_clause(message, limit=240):
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
