"""The bug catalogue is caught, each bug in its own step; correct variants keep full marks.

The catalogue is graded once per session by the `graded_bugs` / `graded_variants` fixtures (conftest.py).
"""

import pytest
from grader.faults.bugs import BUGS, DEVELOPMENT_BUGS
from grader.faults.learners import LEARNER_BUGS
from grader.faults.split import CATALOGUE_SIZE, HELD_OUT, POOL, SHARE, redraw, split_of
from grader.faults.variants import FRESH_VARIANTS, VARIANTS

from grader.build.exercises import clean_solution
from grader.chapter import STEP_KEYS
from grader.check.causes import CAUSES


def test_catalogue_is_large_and_covers_every_step():
    assert len(BUGS) >= 80 and len({bug.id for bug in BUGS + DEVELOPMENT_BUGS}) == len(BUGS) + len(DEVELOPMENT_BUGS)
    assert {bug.step for bug in BUGS} == set(STEP_KEYS)
    assert {variant.step for variant in VARIANTS} >= {"scaling", "masking", "causal_attention",
                                                       "multihead_attention"}
    assert len(VARIANTS) >= 20 and len(FRESH_VARIANTS) >= 10


def test_every_fault_says_where_learners_make_it_and_which_cause_it_is():
    assert [bug.id for bug in BUGS + DEVELOPMENT_BUGS if not bug.source] == []
    assert [bug.id for bug in LEARNER_BUGS + DEVELOPMENT_BUGS
            if not ("https://" in bug.source or bug.source.startswith("book"))] == []
    assert [bug.id for bug in BUGS + DEVELOPMENT_BUGS if bug.diagnosis not in CAUSES] == []


def test_the_held_out_split_is_the_recorded_random_draw():
    """Drawn once from the learner faults, before any probe was written, and never moved."""
    assert redraw() == HELD_OUT
    assert HELD_OUT <= set(POOL) <= {bug.id for bug in LEARNER_BUGS}
    assert len(BUGS) == CATALOGUE_SIZE and len(HELD_OUT) >= SHARE * len(BUGS)
    assert {bug.id for bug in BUGS if split_of(bug.id) == "held-out"} == HELD_OUT
    assert not {bug.id for bug in DEVELOPMENT_BUGS} & HELD_OUT


@pytest.mark.parametrize("mutation", BUGS + DEVELOPMENT_BUGS + VARIANTS, ids=lambda mutation: mutation.id)
def test_every_edit_applies_once_to_the_clean_solution_and_compiles(mutation):
    compile(mutation.apply(clean_solution()), mutation.id, "exec")


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
