"""The fifth held-out learner set (tests/kit/learners_heldout5/: 24 bugs, 20 correct variants, written on
2026-11-28 by a blind tester who read only the student release and the chapter texts; never the grader, its tests,
its docs or solutions/).

Measured once, before any change to the checks, and nothing was changed after it: 20/20 variants kept full marks
and were told no cause; 24/24 bugs lost points in their step and in no other; a right cause, and only that one, was
named for all 24. Asserted as for the other held-out sets (tests/kit/test_learners_heldout2.py's helpers).
"""

import json
from pathlib import Path

import pytest

from grader.check.causes import CAUSES
from tests.kit.test_learners_heldout2 import (assert_full_marks_and_no_cause, assert_lost_where_it_reaches,
                                             assert_only_right_causes, graded_once, named_causes)

HELDOUT = Path(__file__).parent / "learners_heldout5"
MANIFEST = {entry["file"]: entry for entry in json.loads((HELDOUT / "manifest.json").read_text(encoding="utf-8"))}
BUGS = {name: entry for name, entry in MANIFEST.items() if entry["kind"] == "bug"}
VARIANTS = {name: entry for name, entry in MANIFEST.items() if entry["kind"] == "variant"}

# The cause that states each bug's mistake, judged by reading the manifest's entry against the cause's title.
RIGHT_CAUSES = {
    "b01_init_draw_order.py": {"qkv_order"},
    "b02_project_keys_use_wquery.py": {"projection_mixup"},
    "b03_scores_keys_T.py": {"keys_transpose"},
    "b04_scale_by_dk.py": {"scale_dk"},
    "b05_context_transposed_weights.py": {"context_transposed"},
    "b06_variance_divided_not_scaled.py": {"variance_not_recomputed"},
    "b07_v1_scale_after_softmax.py": {"scale_after"},
    "b08_v2_ignores_qkv_bias.py": {"qkv_bias_ignored"},
    "b09_mask_hides_diagonal.py": {"mask_hides_diagonal"},
    "b10_renorm_without_keepdim.py": {"keepdim_missing"},
    "b11_fill_zero_not_inf.py": {"zero_fill"},
    "b12_dropout_no_rescale.py": {"dropout_no_rescale"},
    "b13_dropout_ignores_training.py": {"dropout_in_eval"},
    "b14_dropout_scales_by_keep_prob.py": {"dropout_scaled_down"},
    "b15_ca_mask_not_sliced.py": {"mask_not_sliced"},
    "b16_ca_dropout_on_scores.py": {"dropout_before_softmax"},
    "b17_ca_masked_fill_not_inplace.py": {"no_mask"},
    "b18_ca_softmax_dim1.py": {"softmax_dim"},
    "b19_wrapper_cat_tokens.py": {"concat_tokens"},
    "b20_wrapper_shared_head.py": {"heads_shared"},
    "b21_mha_split_without_transpose.py": {"split_no_transpose"},
    "b22_mha_missing_out_proj.py": {"no_out_proj"},
    "b23_mha_view_without_contiguous.py": {"view_not_contiguous"},
    "b24_mha_scale_by_d_out.py": {"scale_d_out"},
}


@pytest.fixture(scope="module")
def graded(suite):
    return graded_once(HELDOUT, MANIFEST, suite)


def test_the_set_is_what_its_manifest_says(maxima):
    assert (len(BUGS), len(VARIANTS)) == (24, 20)
    assert {path.name for path in HELDOUT.glob("*.py")} == set(MANIFEST)
    assert {step for entry in BUGS.values() for step in entry["steps_affected"]} == set(maxima)
    assert set(RIGHT_CAUSES) == set(BUGS)
    assert {key for keys in RIGHT_CAUSES.values() for key in keys} <= set(CAUSES)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_correct_variant_keeps_full_marks_and_is_told_no_cause(graded, maxima, name):
    assert_full_marks_and_no_cause(graded[name], maxima)


@pytest.mark.parametrize("name", sorted(BUGS))
def test_a_bug_loses_points_in_its_step_and_only_there(graded, maxima, name):
    assert_lost_where_it_reaches(name, BUGS[name], graded[name], maxima)


@pytest.mark.parametrize("name", sorted(BUGS))
def test_no_cause_is_named_that_is_not_the_learners_mistake(graded, name):
    assert_only_right_causes(name, BUGS[name], graded[name], RIGHT_CAUSES[name])


def test_a_right_cause_is_named_for_every_bug(graded):
    """Measured 24 of 24. A miss means the feedback lost a cause it used to state."""
    assert [name for name in RIGHT_CAUSES if not named_causes(graded[name]) & RIGHT_CAUSES[name]] == []
