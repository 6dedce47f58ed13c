"""The bug catalogue is caught, each bug in its own step; correct variants keep full marks.

The catalogue is graded once per session by the `graded_bugs` / `graded_variants` fixtures (conftest.py).
"""

import pytest
from grader.faults.bugs import BUGS
from grader.faults.variants import VARIANTS

from grader.chapter import STEP_KEYS


def test_catalogue_is_large_and_covers_every_step():
    assert len(BUGS) >= 30 and len({bug.id for bug in BUGS}) == len(BUGS)
    assert {bug.step for bug in BUGS} == set(STEP_KEYS)
    assert {variant.step for variant in VARIANTS} >= {"scaling", "masking", "causal_attention",
                                                       "multihead_attention"}


@pytest.mark.parametrize("bug", BUGS, ids=[bug.id for bug in BUGS])
def test_bug_loses_points_in_its_step_only(bug, graded_bugs, maxima):
    result = graded_bugs[bug.id]
    steps = result.step_scores()
    assert steps[bug.step] < maxima[bug.step], f"{bug.id} ({bug.cause}) was not caught"
    elsewhere = {key: steps[key] for key in STEP_KEYS if key != bug.step and steps[key] < maxima[key]}
    assert not elsewhere, f"{bug.id} also cost points in {elsewhere}: " + "; ".join(
        f"{t.name}: {t.output}" for t in result.tests if t.step in elsewhere and t.score < t.max_score)


@pytest.mark.parametrize("variant", VARIANTS, ids=[variant.id for variant in VARIANTS])
def test_correct_variant_keeps_full_marks(variant, graded_variants):
    result = graded_variants[variant.id]
    failed = [(t.name, t.output) for t in result.tests if t.score < t.max_score]
    assert not failed, failed
