"""Diagnosis: the feedback names the right cause for the catalogue's bugs, and none for correct variants."""

import pytest
from grader.faults.bugs import BUGS
from grader.faults.measure import TARGET, causes_named_for_variants, diagnosis_rate

from grader.check.student import StudentError, StudentUnavailable
from grader.feedback.diagnosis import CAUSES, crash_cause, diagnose_step
from grader.check.runner import run_test
from grader.judging.judge import failure_limit
from grader.judging.model import SubmissionResult
from grader.judging.model import TestResult as Verdict
from grader.judging.results_json import parse_results_text, results_text
from grader.check.suite import GradedTest
from grader.sandbox.limits import Limit


def test_every_bug_expects_a_known_cause():
    assert [bug.id for bug in BUGS if bug.diagnosis not in CAUSES] == []


def test_the_right_cause_is_named_for_most_bugs(graded_bugs):
    rate, misses = diagnosis_rate(graded_bugs)
    assert rate >= TARGET, [(bug.id, bug.diagnosis, named) for bug, named in misses]


def test_no_cause_is_named_for_a_correct_variant(graded_variants):
    assert causes_named_for_variants(graded_variants) == {}


@pytest.mark.parametrize("error, cause", [
    ({"type": "RuntimeError", "message": "The size of tensor a (5) must match the size of tensor b (7) at "
      "non-singleton dimension 2", "location": "a.py, line 9, in forward: s.masked_fill_(self.mask.bool(), -1)"},
     "mask_not_sliced"),
    ({"type": "RuntimeError", "message": "The size of tensor a (5) must match the size of tensor b (7)",
      "location": "a.py, line 9, in forward: s.masked_fill_(self.mask.bool()[:n, :n], -1)"}, None),
    ({"type": "RuntimeError", "message": "Expected size for first two dimensions of batch2 tensor to be: [2, 2]",
      "location": "a.py, line 3, in forward: attn_scores = queries @ keys.T"}, "keys_transpose"),
    ({"type": "RuntimeError", "message": "mat1 and mat2 shapes cannot be multiplied (4x5 and 3x5)",
      "location": "a.py, line 3, in project: return x @ W_query.T, x @ W_key.T, x @ W_value.T"}, "weight_transposed"),
    ({"type": "RuntimeError", "message": "view size is not compatible with input tensor's size and stride (at least"
      " one dimension spans across two contiguous subspaces). Use .reshape(...) instead.", "location": ""},
     "view_not_contiguous"),
    ({"type": "InjectionError", "message": "W_key.bias is not an nn.Parameter of CausalAttention (found NoneType); "
      "create it as the chapter does", "location": ""}, "qkv_bias_ignored"),
    ({"type": "InjectionError", "message": "out_proj.bias is not an nn.Parameter of MultiHeadAttention (found "
      "NoneType); create it as the chapter does", "location": ""}, "out_proj_bias"),
    ({"type": "ZeroDivisionError", "message": "division by zero", "location": "a.py, line 1, in f: 1 / 0"}, None),
])
def test_crash_signatures(error, cause):
    assert crash_cause(error) == cause


def test_no_evidence_no_cause():
    failed = {"name": "masking: x", "score": 0, "max_score": 1, "output": "causal attention weights differ from "
              "the reference at 3 of 25 entries", "details": {}}
    assert diagnose_step([failed]) is None
    passed = dict(failed, score=1, details={"cause": "zero_fill", "kind": "signature"})
    assert diagnose_step([passed]) is None  # a passing test is no evidence


def test_strongest_evidence_wins_and_is_quoted():
    tests = [{"name": "masking: a", "score": 0, "max_score": 1, "output": "boom", "details":
              {"error": {"type": "RuntimeError", "message": "must match the size of tensor",
                         "location": "f.py, line 1, in g: x.masked_fill(self.mask, 0)"}}},
             {"name": "masking: b", "score": 0, "max_score": 2, "output": "row 4 of the weights sums to 2.1; more",
              "details": {"cause": "softmax_dim", "kind": "property"}}]
    found = diagnose_step(tests)
    assert found["cause"] == "softmax_dim" and found["evidence"].startswith("row 4 of the weights sums to 2.1")


@pytest.mark.parametrize("error, kind", [
    (StudentUnavailable("time limit: this step ran past its 10 s budget while forward (an infinite loop?)",
                        Limit.TIME), Limit.TIME),
    (StudentUnavailable("memory limit: your code used more than 2 GiB while forward", Limit.MEMORY), Limit.MEMORY),
    (StudentUnavailable("your code's process crashed (signal SIGSEGV) while forward", Limit.CRASH), Limit.CRASH),
    (StudentError("project(...)", {"type": "MemoryError", "message": ""}), Limit.MEMORY),
    (AssertionError("queries differ from the reference at 3 of 12 entries"), None),
])
def test_limits_are_recognised(error, kind):
    """The verdict carries the limit a step hit as a typed value, and results.json keeps it."""
    def failing(student):
        raise error

    test = GradedTest("projection: a", "projection", 1.0, "visible", "public", failing)
    details = {}
    assert run_test(test, None, details)[0] is False
    limit = failure_limit(details)
    assert limit == kind
    verdict = Verdict(test.name, test.step, 0.0, 1.0, str(error), test.visibility, {}, limit)
    result = SubmissionResult("s", "", tests=[verdict])
    again = parse_results_text(results_text(result, {"projection": 1.0}), "s")
    assert again.tests[0].limit == kind


# -- the fault model's rule ---------------------------------------------------------------------------------------
from grader.check.causes import PROBES, name_cause, observation  # noqa: E402


def test_a_cause_is_named_only_when_exactly_one_known_fault_matches_every_probe():
    scale = observation("temperature", "d_k")
    assert name_cause([observation("rows", "ok"), scale]) == "scale_dk"
    # Two faults supported, neither contradicted: no cause.
    assert name_cause([observation("pattern", "none")]) is None  # no_mask or zero_fill
    # A probe that finds the property right rules out the faults that would break it.
    assert name_cause([observation("pattern", "none"), observation("future_scores", "leak")]) == "no_mask"
    assert name_cause([observation("pattern", "none"), observation("future_scores", "ok")]) == "zero_fill"
    # A signature match contradicts the other faults the same probe modelled.
    matched = observation("signature", matched=["scale_after"], modelled=["scale_after", "no_scale"])
    assert name_cause([matched, observation("temperature", "one")]) == "scale_after"
    # An outcome no known fault gives: nothing to name.
    assert name_cause([observation("temperature", "other")]) is None
    assert name_cause([]) is None


def test_a_crash_pattern_decides_only_when_nothing_else_does():
    crash = observation("crash", "mask_not_sliced")
    assert name_cause([crash]) == "mask_not_sliced"
    assert name_cause([crash, observation("rows", "axis")]) == "softmax_dim"
    assert name_cause([crash, observation("lengths", "ok")]) is None  # the probe rules the crash's reading out


def test_the_diagnose_report_runs_on_a_sample_of_each_split():
    """`make diagnose-report` grades the whole catalogue (minutes); here a sample of each part."""
    import io

    from grader.faults.measure import main
    from grader.faults.split import HELD_OUT

    held_out = sorted(HELD_OUT)[0]
    sample = ["masking_fill_zero", "dropout_no_rescale", held_out, "mha_scales_by_num_heads", "scaling_math_sqrt"]
    stream = io.StringIO()
    main(["--only", *sample], stream)
    text = stream.getvalue()
    for line in ("tuning: 2 faults | caught 2/2", "held-out: 1 faults | caught", "development: 1 faults",
                 "correct variants with a cause: 0 of 1"):
        assert line in text, text


def test_weights_above_one_that_the_temperature_reads_as_a_softmax_are_not_a_missing_softmax():
    """Before: dropout left on in eval mode (F.dropout without training=self.training) was told "the softmax is
    missing": its rescaled survivors are above one. Now: a temperature read (a softmax of the scores at some scale)
    rules no_softmax out, and the rescaling faults need eval mode to drop nothing (dropout active in eval mode
    drops and rescales both outputs alike, so the rescaling reads as "one")."""
    dropout_on = [observation("rows", "raw"), observation("temperature", "ok"), observation("pattern", "other")]
    assert name_cause(dropout_on) is None
    in_eval = dropout_on + [observation("eval", "random"), observation("rescale", "one"), observation("rate", "ok")]
    assert name_cause(in_eval) == "dropout_in_eval"
    assert name_cause([observation("rows", "raw"), observation("temperature", "other")]) == "no_softmax"
    assert name_cause([observation("rows", "raw")]) == "no_softmax"
    assert name_cause([observation("rescale", "one"), observation("rate", "ok"), observation("eval", "ok")]) == \
        "dropout_no_rescale"


def test_nan_on_the_future_alone_tells_no_story():
    """Before: NaN exactly on the future named "the softmax is taken over the wrong axis", also for a
    renormalisation by a sum over the batch axis (0/0, no softmax at all). Now: that NaN is possible for a softmax
    over the wrong axis but is no evidence of it; the rows' sums along another axis still are."""
    assert name_cause([observation("nan", "future")]) is None
    assert name_cause([observation("nan", "future"), observation("rows", "axis")]) == "softmax_dim"
    assert "softmax" not in PROBES["nan"][1]["future"].split("(")[0]


@pytest.mark.parametrize("message, line, cause", [
    # torch 2.13's words, then torch 2.1's; the float must be the view's head_dim argument
    ("view(): argument 'size' failed to unpack the object at pos 4 with error \"type must be tuple of ints,but "
     "got float\"", "q = self.W_query(x).view(b, n, self.num_heads, self.head_dim)", "head_dim_wrong"),
    ("view(): argument 'size' (position 1) must be tuple of ints, but found element of type float at pos 4",
     "q = self.W_query(x).view(b, n, self.num_heads, self.head_dim)", "head_dim_wrong"),
    ("view(): argument 'size' failed to unpack the object at pos 3 with error \"type must be tuple of ints,but "
     "got float\"", "q = self.W_query(x).view(b, n, self.num_heads, self.head_dim)", None),
    ("mat1 and mat2 shapes cannot be multiplied (6x2 and 6x2)", "attn_scores = queries @ keys", "keys_not_transposed"),
    ("mat1 and mat2 shapes cannot be multiplied (6x2 and 3x2)", "attn_scores = queries @ keys", None),
])
def test_crashes_read_by_their_one_meaning(message, line, cause):
    """Before: torch's raw text for a float head_dim and for SelfAttention_v1's untransposed keys. Now: named
    when the failing line and the message single the mistake out (the same shapes on both sides of `@`)."""
    assert crash_cause({"type": "RuntimeError", "message": message, "location": f"a.py, line 3, in f: {line}"}) == \
        cause
