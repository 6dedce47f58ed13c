"""The second held-out learner set (tests/kit/learners_heldout2/: 45 bugs, 15 correct variants, written on
2026-11-26 by a writer who read only the student stub, solutions/ and the public record of learners' mistakes,
never the grader; manifest.json gives each file's step, the steps it propagates to, and the mistake).

Nothing in the kit was changed after this set was measured: its figures are the kit's calibration on material
it was not tuned on (first measurement, 16:20 UTC: caught 45/45, confined 45/45, a cause named for 38/45, none
wrong; 15/15 variants keep full marks, none told a cause). Its unnamed bugs were read after that (19:00 UTC) and
rules written for their classes of mistake (docs/feedback.md): for those rules it is no longer an independent
measure. Asserted, as for the first held-out set:
  * every correct variant keeps full marks and is told no cause;
  * every bug loses points in its step, and in no step but its own and those it propagates to;
  * no cause is named (as the step's most likely cause or in a check's message) that is not the learner's
    mistake: RIGHT_CAUSES was judged by reading each manifest entry against the cause's title.
"""

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from grader.check.causes import CAUSES
from grader.feedback.diagnosis import diagnose
from grader.judging.judge import Options, grade_submission

HELDOUT = Path(__file__).parent / "learners_heldout2"
MANIFEST = {entry["file"]: entry for entry in json.loads((HELDOUT / "manifest.json").read_text(encoding="utf-8"))}
BUGS = {name: entry for name, entry in MANIFEST.items() if entry["kind"] == "bug"}
VARIANTS = {name: entry for name, entry in MANIFEST.items() if entry["kind"] == "variant"}

# The causes that state each bug's mistake (a file with two mistakes may be told either). A bug not here has no
# right cause among today's CAUSES.
RIGHT_CAUSES = {
    "projection_init_key_drawn_first.py": {"qkv_order"},
    "projection_only_second_token.py": {"project_one_token"},
    "projection_weights_d_out_by_d_in.py": {"weight_shape", "weight_transposed"},  # (d_out, d_in), then W.T
    "scaling_softmax_dim0.py": {"softmax_dim"},
    "scaling_divide_by_d_k.py": {"scale_dk"},
    "scaling_after_softmax.py": {"scale_after"},
    "scaling_scores_keys_dot_T.py": {"keys_transpose"},
    "scaling_variance_divided_not_dots.py": {"variance_not_recomputed"},
    "scaling_v1_plain_tensors.py": {"weights_not_parameters"},
    "scaling_v2_linear_weight_not_transposed.py": {"linear_weight_matmul"},
    "scaling_self_attention_scaled_by_d_in.py": {"scale_d_in"},
    "scaling_2bugs_v2_unscaled_and_softmax_dim0.py": {"no_scale", "softmax_dim"},
    "masking_triu_diagonal0.py": {"mask_hides_diagonal"},
    "masking_tril_hides_past.py": {"mask_past"},
    "masking_masked_fill_result_discarded.py": {"no_mask"},
    "masking_fill_with_zero.py": {"zero_fill"},
    "masking_no_renormalisation.py": {"not_renormalised"},
    "masking_renormalise_with_softmax.py": {"renorm_softmax"},
    "masking_mask_is_float.py": {"mask_float"},
    "dropout_survivors_not_rescaled.py": {"dropout_no_rescale"},
    "dropout_keeps_with_probability_p.py": {"dropout_keep_probability"},
    "dropout_ignores_training_flag.py": {"dropout_in_eval"},
    "dropout_classic_scaling_at_eval.py": {"dropout_in_eval", "dropout_no_rescale"},  # (1 - p) at evaluation
    "causal_attention_keys_dot_T.py": {"keys_transpose"},
    "causal_attention_mask_not_sliced.py": {"mask_not_sliced"},
    "causal_attention_mask_plain_attribute.py": {"mask_not_buffer"},
    "causal_attention_softmax_dim1.py": {"softmax_dim"},
    "causal_attention_functional_dropout_always_on.py": {"dropout_in_eval"},
    # dropout on the raw scores: true that it never reaches the weights, though dropout_before_softmax is the
    # more exact cause (measured at 16:20: the kit said dropout_not_applied; since 19:25 dropout_before_softmax, read
    # from the training weights: a softmax of scores of which some were zeroed)
    "causal_attention_dropout_on_scores_before_masking.py": {"dropout_before_softmax", "dropout_not_applied"},
    "causal_attention_dropout_scaled_twice.py": {"dropout_rescaled_outside"},
    "causal_attention_qkv_bias_ignored.py": {"qkv_bias_forced"},
    "causal_attention_2bugs_diagonal0_and_no_dropout.py": {"mask_hides_diagonal", "dropout_not_applied"},
    "mha_wrapper_plain_python_list.py": {"heads_not_modulelist"},
    "mha_wrapper_cat_dim0.py": {"concat_batch"},
    "mha_wrapper_one_head_repeated.py": {"heads_shared"},
    "multihead_attention_view_heads_first.py": {"split_no_transpose"},
    "multihead_attention_merge_without_transpose.py": {"merge_no_transpose"},
    "multihead_attention_contiguous_missing.py": {"view_not_contiguous"},
    "multihead_attention_out_proj_not_applied.py": {"no_out_proj"},
    "multihead_attention_head_dim_true_division.py": {"head_dim_wrong"},
    "multihead_attention_scaled_by_d_out.py": {"scale_d_out"},
    "multihead_attention_no_divisibility_check.py": {"no_divisibility_check"},
    "multihead_attention_batch_and_tokens_swapped.py": {"shape_unpacked_swapped"},
    "multihead_attention_mask_built_in_forward.py": {"mask_not_buffer"},
    "multihead_attention_2bugs_merge_no_transpose_no_out_proj.py": {"merge_no_transpose", "no_out_proj"},
}


# Bugs that only a GPU shows: on the CPU their outputs, lengths and structure are a correct variant's. Since
# 2026-11-26 (19:20 UTC) a module that keeps no mask and builds it in forward is judged by its behaviour (as
# tests/kit/learners_heldout's variants/mask_on_the_fly.py, which builds it on the input's device, must be); this
# bug builds it on the default device, which `make grade DEVICE=cuda` shows (test_gpu.py, and below).
# Since 2026-11-28 the CPU grading sees that one too: a forward that mixes a tensor made on the CPU with the
# module's fails the structure check, as on a GPU (check.session.DevicesMixed). None is left that only a GPU shows.
SEEN_ONLY_ON_A_GPU = {}


@pytest.fixture(scope="module")
def graded(suite):
    return graded_once(HELDOUT, MANIFEST, suite)


def graded_once(folder, names, suite):
    """{file: SubmissionResult}, every file graded once through the sandboxed judge, two at a time."""
    options = Options()

    def one(name):
        path = folder / name
        return name, grade_submission(path, path.stem, suite, options)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, names))


def lost_steps(result, maxima):
    scores = result.step_scores()
    return {step for step, points in maxima.items() if scores[step] < points - 1e-9}


def named_causes(result):
    """{cause keys} the feedback states: each step's most likely cause and every cause title in a failing check."""
    diagnosed = {found["cause"] for found in diagnose(result.tests).values() if found}
    return diagnosed | {key for test in result.tests if test.score < test.max_score
                        for key, cause in CAUSES.items() if cause.title in (test.output or "")}


def assert_full_marks_and_no_cause(result, maxima):
    """A correct file keeps every step's points and is told no cause."""
    assert lost_steps(result, maxima) == set(), [(t.name, (t.output or "")[:300]) for t in result.tests
                                                 if t.score < t.max_score]
    assert named_causes(result) == set()


def assert_lost_where_it_reaches(name, entry, result, maxima):
    """A bug loses points in its step (manifest: steps_affected), and in no step it cannot reach (propagates_to)."""
    lost = lost_steps(result, maxima)
    assert lost & set(entry["steps_affected"]), f"{name}: {entry['cause']}"
    assert lost <= set(entry["steps_affected"]) | set(entry.get("propagates_to", [])), (name, sorted(lost))


def assert_only_right_causes(name, entry, result, right):
    """Every cause the feedback states is one of `right`, the causes that state the learner's mistake."""
    wrong = named_causes(result) - right
    assert wrong == set(), f"{name}: {entry['cause']} -- told {[CAUSES[key].title for key in wrong]}"


def test_the_set_is_what_its_manifest_says(maxima):
    assert (len(BUGS), len(VARIANTS)) == (45, 15)
    assert {path.name for path in HELDOUT.glob("*.py")} == set(MANIFEST)
    steps = {step for entry in BUGS.values() for step in entry["steps_affected"] + entry.get("propagates_to", [])}
    assert steps <= set(maxima)
    assert set(RIGHT_CAUSES) <= set(BUGS)
    assert {key for keys in RIGHT_CAUSES.values() for key in keys} <= set(CAUSES)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_correct_variant_keeps_full_marks_and_is_told_no_cause(graded, maxima, name):
    assert_full_marks_and_no_cause(graded[name], maxima)


def on_the_cpu(name):
    if name in SEEN_ONLY_ON_A_GPU:
        return [pytest.mark.xfail(strict=True, reason=f"only a GPU shows it: {SEEN_ONLY_ON_A_GPU[name]}")]
    return []


@pytest.mark.parametrize("name", [pytest.param(name, marks=on_the_cpu(name)) for name in sorted(BUGS)])
def test_a_bug_loses_points_in_its_step_and_only_where_it_reaches(graded, maxima, name):
    assert_lost_where_it_reaches(name, BUGS[name], graded[name], maxima)


@pytest.mark.parametrize("name", sorted(BUGS))
def test_no_cause_is_named_that_is_not_the_learners_mistake(graded, name):
    assert_only_right_causes(name, BUGS[name], graded[name], RIGHT_CAUSES.get(name, set()))


def test_a_cause_is_named_for_most_bugs(graded):
    """Measured 38 of 45 at 16:20 UTC; 43 of 45 at 19:40 (rules for a second softmax after masking, a float mask,
    weights rescaled by hand beside nn.Dropout, raw matrices that are not parameters, one token projected, x.shape
    unpacked as (num_tokens, b, d_in); the GPU-only bug is no longer caught on the CPU). A drop means the feedback
    lost a cause it used to state."""
    named = [name for name in BUGS if named_causes(graded[name]) & RIGHT_CAUSES.get(name, set())]
    assert len(named) >= 43, sorted(set(BUGS) - set(named))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here: run it on a GPU runner")
@pytest.mark.parametrize("name", ["multihead_attention_mask_built_in_forward.py"])
def test_a_bug_only_a_gpu_showed_loses_points_there(grade, maxima, name):
    """Graded on the GPU, the bug loses points in its step, and only where it reaches."""
    result = grade((HELDOUT / name).read_text(encoding="utf-8"), device="cuda")
    assert_lost_where_it_reaches(name, BUGS[name], result, maxima)
