"""Grading on a GPU runner (`make grade DEVICE=cuda`): skipped, not failed, where there is no GPU.

On CUDA the student's modules and inputs live on the GPU, so the device bugs
that the CPU cannot show surface here: a mask kept as a plain attribute stays
on the CPU, a mask built in forward without device=x.device too. Correct code,
including its variants, keeps full marks; tolerances are the device's own
(`grader.testing.TOLERANCES`), and no test compares seeded dropout masks.
"""

import pytest
import torch
from grader.faults.bugs import BUGS
from grader.faults.variants import VARIANTS

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU here; run `make test` or `make bench DEVICE=cuda` on a GPU runner"),
]

# Correct on the CPU, wrong on a GPU: the mask is created on the CPU in forward.
MASK_WITHOUT_DEVICE = (
    "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n",
    "        future = torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1).bool()\n"
    "        attn_scores.masked_fill_(future, -torch.inf)\n",
)


def test_solution_gets_full_marks_on_the_gpu(grade, clean, maxima):
    result = grade(clean, device="cuda")
    assert result.score == sum(maxima.values()), [t.output for t in result.tests if t.score < t.max_score]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.id)
def test_correct_variants_keep_full_marks_on_the_gpu(grade, clean, maxima, variant):
    result = grade(variant.apply(clean), device="cuda")
    assert result.score == sum(maxima.values()), [t.output for t in result.tests if t.score < t.max_score]


@pytest.mark.parametrize("bug", [b for b in BUGS if b.id.endswith("mask_plain_attribute")], ids=lambda b: b.id)
def test_plain_attribute_mask_fails_on_the_gpu_and_says_why(grade, clean, maxima, bug):
    result = grade(bug.apply(clean), device="cuda")
    steps = result.step_scores()
    assert steps[bug.step] < maxima[bug.step]
    assert all(steps[key] == maxima[key] for key in maxima if key != bug.step)
    assert any("register_buffer" in test.output for test in result.tests if test.step == bug.step)


def test_mask_built_without_device_fails_on_the_gpu_and_says_why(grade, clean, maxima):
    source = clean.replace(*MASK_WITHOUT_DEVICE, 1)
    assert source != clean
    result = grade(source, device="cuda")
    steps = result.step_scores()
    assert steps["causal_attention"] < maxima["causal_attention"]
    assert any("device=x.device" in test.output for test in result.tests if test.step == "causal_attention")


@pytest.mark.parametrize("bug", BUGS[::6], ids=lambda b: b.id)
def test_bugs_lose_points_in_their_step_on_the_gpu_too(grade, clean, maxima, bug):
    result = grade(bug.apply(clean), device="cuda")
    steps = result.step_scores()
    assert steps[bug.step] < maxima[bug.step]
    assert all(steps[key] == maxima[key] for key in maxima if key != bug.step)
