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


def describe_info(buffers=(), parameters=(), plain=None):
    """A module's description (check.session.describe_module) with these buffers, parameters and plain tensors."""
    return {"modules": {}, "buffers": {name: {"shape": [4, 4]} for name in buffers},
            "parameters": {name: {"shape": [4, 4]} for name in parameters}, "plain_tensors": plain or {}}


def test_a_module_that_keeps_no_mask_is_judged_by_its_behaviour_and_a_mask_kept_wrongly_fails():
    """Before: a module without a `mask` buffer failed the structure checks ("missing": mask_not_buffer), also one
    that builds its mask in forward on the input's device (correct on every device: the held-out variant
    mask_on_the_fly). Now: a module that keeps no mask is left to the behaviour checks (the GPU run shows a mask
    built on the default device); a mask kept as a plain attribute (under any name) or as an nn.Parameter fails
    with its cause."""
    from grader.check.signatures import mask_buffer_outcome
    from tests.public.behaviour import expect_mask_kept_as_buffer

    weights = ["W_query.weight", "W_key.weight", "W_value.weight"]
    assert mask_buffer_outcome(describe_info(["mask"], weights)) == "ok"
    assert mask_buffer_outcome(describe_info((), weights)) is None
    assert mask_buffer_outcome(describe_info((), weights, {"scale": {"shape": []}})) is None  # a 0-d number
    assert mask_buffer_outcome(describe_info((), weights, {"mask": {"shape": [4, 4]}})) == "attribute"
    assert mask_buffer_outcome(describe_info((), weights, {"causal": {"shape": [4, 4]}})) == "attribute"
    assert mask_buffer_outcome(describe_info((), [*weights, "mask"])) == "parameter"
    assert name_cause([observation("mask_buffer", "attribute")]) == "mask_not_buffer"
    assert name_cause([observation("mask_buffer", "parameter")]) == "mask_parameter"
    assert expect_mask_kept_as_buffer(describe_info(["mask"], weights)) is True
    assert expect_mask_kept_as_buffer(describe_info((), weights)) is False
    for info in (describe_info((), weights, {"causal": {"shape": [4, 4]}}), describe_info((), [*weights, "mask"])):
        with pytest.raises(AssertionError, match="registered buffer"):
            expect_mask_kept_as_buffer(info)


def test_a_second_softmax_after_masking_is_named_from_the_weights():
    """Before: mask_and_renormalize(w) = softmax(w * visible) was told only "mask pattern (nothing is hidden)"
    (no_mask or zero_fill: no cause). Now: the output is measured to be a softmax of the masked weights (renorm =
    "softmax"), which names renorm_softmax and rules out the fill and mask faults of causal_attention_weights."""
    import torch

    from grader.check.signatures import renorm_outcome

    weights = torch.softmax(torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(0)), dim=-1)
    kept = weights * torch.tril(torch.ones(5, 5))
    assert renorm_outcome(torch.softmax(kept, dim=-1), weights) == "softmax"
    assert renorm_outcome(kept / kept.sum(-1, keepdim=True), weights) == "ok"
    assert renorm_outcome(kept, weights) == "short"
    assert name_cause([observation("renorm", "softmax"), observation("pattern", "none")]) == "renorm_softmax"
    assert name_cause([observation("pattern", "none"), observation("renorm", "ok"),
                       observation("future_scores", "leak")]) == "no_mask"


def test_a_float_mask_from_causal_mask_is_named():
    """Before: "causal_mask should return a bool tensor" named no cause. Now: a floating-point 0/1 mask names
    mask_float; another dtype or other values name nothing."""
    import torch

    from grader.check.signatures import mask_dtype_observations

    mask = torch.triu(torch.ones(4, 4), diagonal=1)
    assert name_cause(mask_dtype_observations(mask)) == "mask_float"
    assert mask_dtype_observations(mask.bool()) == []
    assert mask_dtype_observations(mask.long()) == []
    assert mask_dtype_observations(mask * 2) == []


def test_eval_weights_divided_by_one_minus_p_are_dropout_rescaled_outside_dropout():
    """Before: nn.Dropout's output divided by (1-p) again by hand was told only "some weights are above one".
    Now: eval-mode rows that all sum to 1/(1-p), for the module's dropout rate p, with the mask and the scale
    right, are read as rows = "dropout": dropout_rescaled_outside. Other row sums, or a wrong pattern, keep their
    reading."""
    import torch

    from grader.check.signatures import dropout_scaled_rows

    scores = torch.randn(3, 5, 5, generator=torch.Generator().manual_seed(1))
    future = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)
    found = [observation("rows", "raw"), observation("temperature", "ok"), observation("pattern", "ok")]
    read = dropout_scaled_rows(found, weights / 0.7, 0.3)
    assert read[0] == observation("rows", "dropout") and name_cause(read) == "dropout_rescaled_outside"
    assert dropout_scaled_rows(found, weights / 0.5, 0.3) == found
    wrong_pattern = found[:2] + [observation("pattern", "none")]
    assert dropout_scaled_rows(wrong_pattern, weights / 0.7, 0.3) == wrong_pattern


def test_one_token_projected_is_named():
    """Before: project returning x[..., 1, :] @ W (the chapter's x_2 example) said only that the shape was wrong.
    Now: each output equal to its own role's projection of one token names project_one_token."""
    import torch

    from grader.check.signatures import projection_observation

    generator = torch.Generator().manual_seed(2)
    x, weights = torch.randn(2, 4, 5, generator=generator), [torch.randn(5, 3, generator=generator) for _ in "qkv"]
    second = tuple(x[..., 1, :] @ W for W in weights)
    assert name_cause([projection_observation(second, x, weights)]) == "project_one_token"
    assert name_cause([projection_observation(tuple(x @ W for W in weights), x, weights)]) is None
    mixed = (x[..., 1, :] @ weights[0], x[..., 2, :] @ weights[1], x[..., 1, :] @ weights[2])
    assert name_cause([projection_observation(mixed, x, weights)]) is None


def test_raw_matrices_that_are_not_parameters_are_named():
    """Before: SelfAttention_v1's `W_query is not an nn.Parameter ... (found Tensor)` (no `.weight`: the raw
    matrix itself) named nothing. Now: weights_not_parameters, as for an nn.Linear's weight."""
    error = {"type": "InjectionError", "message": "W_query is not an nn.Parameter of SelfAttention_v1 (found "
             "Tensor); create it as the chapter does", "location": ""}
    assert crash_cause(error) == "weights_not_parameters"
    assert crash_cause(dict(error, message=error["message"].replace("Tensor", "NoneType"))) is None


def test_heads_added_together_are_named_by_their_signature():
    """Before: a wrapper that sums its heads' outputs said only that the shape was wrong. Now: the output equal
    to the sum of the heads' outputs (a modelled join) names heads_summed."""
    joins = ["heads_reversed", "concat_tokens", "concat_batch", "stack_not_cat", "first_head_only", "heads_summed"]
    assert name_cause([observation("signature", matched=["heads_summed"], modelled=joins)]) == "heads_summed"


def test_dropout_on_the_scores_before_the_mask_is_named_from_the_training_weights():
    """Before: dropout on the raw scores, before the mask and the softmax, drops no weight to zero, and was told
    "the dropout module is never applied" (rate "none"). Now: training weights that are exactly a softmax of the
    scores with some zeroed and the rest divided by (1-p) read as target = "scores": dropout_before_softmax, which
    rules dropout_not_applied out. Weights that do not change in training keep dropout_not_applied."""
    import math

    import torch

    from grader.check.signatures import dropped_scores

    generator, p, d_k = torch.Generator().manual_seed(3), 0.3, 4
    scores = torch.randn(2, 5, 5, generator=generator, dtype=torch.float64) * 2
    future = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)

    def weights(of):
        return torch.softmax((of / math.sqrt(d_k)).masked_fill(future, -torch.inf), dim=-1)

    keep = torch.rand(8, 2, 5, 5, generator=generator) >= p
    first, trained = weights(scores).expand(8, 2, 5, 5), weights(scores * keep / (1 - p))
    assert dropped_scores(first, trained, scores, d_k, p)
    assert not dropped_scores(first, first.clone(), scores, d_k, p)  # no dropout at all
    assert not dropped_scores(first, weights(scores * keep / (1 - 0.5)), scores, d_k, p)  # another rescaling
    seen = [observation("rate", "none"), observation("target", "ok"), observation("target", "scores")]
    assert name_cause(seen) == "dropout_before_softmax"
    assert name_cause([observation("rate", "none"), observation("target", "ok")]) == "dropout_not_applied"


def test_context_vectors_that_are_each_tokens_own_value_are_named():
    """Before: (w.unsqueeze(-1) * v.unsqueeze(-2)).sum(-2), which pairs weight[i, j] with value[i] and so gives
    each token its own value vector, said only that the context vectors differ. Now: the hidden check models that
    output (row sums times values) and a match names context_own_value."""
    import torch

    weights = torch.softmax(torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(4)), dim=-1)
    values = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(5))
    broadcast = (weights.unsqueeze(-1) * values.unsqueeze(-2)).sum(dim=-2)
    assert torch.allclose(broadcast, weights.sum(-1, keepdim=True) * values, atol=1e-6)
    modelled = ["context_transposed", "context_own_value"]
    assert name_cause([observation("signature", matched=["context_own_value"], modelled=modelled)]) == \
        "context_own_value"


def test_batch_and_token_axes_unpacked_the_wrong_way_are_named():
    """Before: `num_tokens, b, d_in = x.shape` in MultiHeadAttention (an output of shape (n, b, d_out), right when
    b == n) was told only that information leaks from the future (no cause: three mask faults read that). Now:
    the battery reads the weights through a batch of as many sequences as tokens; when they are right there, it
    keeps those readings (they rule the mask faults out) and batch_order = "swapped" names the unpacking."""
    leak = [observation("causality", "leak"), observation("batch", "mixed")]
    assert name_cause(leak) is None
    square = [observation("rows", "ok"), observation("temperature", "ok"), observation("pattern", "ok")]
    assert name_cause(leak + square + [observation("batch_order", "swapped")]) == "shape_unpacked_swapped"
