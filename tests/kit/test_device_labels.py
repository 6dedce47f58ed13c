"""The checks keep the device of the student's answers, tested without a GPU.

On `make grade DEVICE=cuda` the worker runs the student's code on the GPU and every tensor it sends back says
so (`wire_device`); a check compares that with the device of its inputs, to tell a mask left on the CPU from a
right one. A check that rebuilt an answer (`expect_tensor` gives a float64 copy) and then asked where it lived
read "cpu": the first GPU run of the kit (an H200, 2026-11-27) took 2 of 15 scaling points from the reference
solution, and from every correct variant. CI has no GPU, so here the student's code runs on the CPU while its
answers say "cuda:0", as a GPU worker's do: every check must give the same verdicts as on a CPU-labelled run.
(tests/kit/test_gpu.py grades for real on a GPU, where there is one.)
"""

import re
from pathlib import Path

import pytest

from grader.build.exercises import clean_solution
from grader.check.runner import run_test
from grader.check.student import Student, in_process
from grader.check.suite import discover
from grader.faults.bugs import BUGS
from grader.faults.variants import VARIANTS
from tests.kit.test_learners_heldout4 import REFUSED_BY_A_GPU

GPU_DEVICE = "cuda:0"
KIT = Path(__file__).parent
# Correct files the blind testers wrote (never tuned on here): einsum, sdpa, fused projections, other masks...
HELDOUT_VARIANTS = sorted(path for path in [*(KIT / "learners_heldout" / "variants").glob("*.py"),
                                             *KIT.glob("learners_heldout*/variant_*.py")]
                          if path.name not in REFUSED_BY_A_GPU)  # not correct on a GPU (test_learners_heldout4)


class LabelledAsGpu:
    """A transport over an in-process student whose answers name the GPU, as a CUDA worker's answers do."""

    def __init__(self, transport):
        self.transport = transport

    def send(self, request):
        return relabelled(self.transport.send(request))


def relabelled(value):
    """`value` with every device that says "cpu" saying GPU_DEVICE (tensors and the module descriptions)."""
    if isinstance(value, list):
        return [relabelled(item) for item in value]
    if isinstance(value, dict):
        return {key: GPU_DEVICE if key == "device" and item == "cpu" else relabelled(item)
                for key, item in value.items()}
    return value


def verdicts(path, suite, on_gpu):
    student, _ = in_process(path)
    if on_gpu:
        student = Student(LabelledAsGpu(student.transport), device="cuda")
    return [(test.name, *run_test(test, student)) for test in suite]


@pytest.fixture(scope="module")
def suite():
    return discover()


def written(tmp_path, source):
    path = tmp_path / "attention.py"
    path.write_text(source, encoding="utf-8")
    return path


def test_the_reference_passes_every_check_when_its_answers_come_from_the_gpu(tmp_path, suite):
    failed = [(name, message) for name, passed, message in verdicts(written(tmp_path, clean_solution()), suite, True)
              if not passed]
    assert failed == []


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.id)
def test_correct_variants_pass_every_check_when_their_answers_come_from_the_gpu(tmp_path, suite, variant):
    path = written(tmp_path, variant.apply(clean_solution()))
    assert [name for name, passed, _ in verdicts(path, suite, True) if not passed] == []


@pytest.mark.parametrize("path", HELDOUT_VARIANTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_held_out_variants_pass_every_check_when_their_answers_come_from_the_gpu(path, suite):
    assert [name for name, passed, _ in verdicts(path, suite, True) if not passed] == []


# The GPU's tolerances are its own (grader.check.testing.TOLERANCES): how many entries differ, and the tolerance
# the message quotes, may change with them; the verdict and what the student is told to check may not.
TOLERANCE_CLAUSE = re.compile(r"at \d+ of \d+ entries \(first at [^;]*; tolerance [^)]*\)")


def told(verdicts_):
    return [(name, passed, TOLERANCE_CLAUSE.sub("at ...", message)) for name, passed, message in verdicts_]


@pytest.mark.parametrize("bug", BUGS[::5], ids=lambda b: b.id)
def test_a_bug_is_told_the_same_on_the_gpu_as_on_the_cpu(tmp_path, suite, bug):
    """Where the answers come from changes no verdict and no cause: a device check fires only on a device."""
    path = written(tmp_path, bug.apply(clean_solution()))
    assert told(verdicts(path, suite, True)) == told(verdicts(path, suite, False))
