"""Grading on a GPU runner (`make grade DEVICE=cuda`): skipped, not failed, where there is no GPU.

On CUDA the student's modules and inputs live on the GPU, so the device bugs
that the CPU cannot show surface here: a mask kept as a plain attribute stays
on the CPU, a mask built in forward without device=x.device too. Correct code,
including its variants, keeps full marks; tolerances are the device's own
(`grader.testing.TOLERANCES`), and no test compares seeded dropout masks.
"""

import csv
import json
import os
import subprocess
import sys

import pytest
import torch
from grader.check.student import Student
from grader.faults.bugs import BUGS
from grader.faults.variants import VARIANTS
from grader.paths import ROOT
from grader.sandbox import pool, seal
from grader.sandbox.limits import Limit
from grader.sandbox.transport import WorkerTransport

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


# What a sealed CUDA worker can see. On the CPU its procfs shows its own processes only (subset=pid); the NVIDIA
# driver reads /proc/driver/nvidia, so on CUDA the whole procfs stays with the host's figures masked one by one
# (seal.MASKED_FILES): this path runs only where there is a GPU.
SEALED_PROBES = """
import os
import torch


def sizes(paths):  # bytes a file shows, entries a folder lists; -1 where it cannot be read or is not there
    found = {}
    for path in paths:
        try:
            if os.path.isdir(path):
                found[path] = len(os.listdir(path))
            else:
                with open(path, "rb") as file:
                    found[path] = len(file.read(4096))
        except OSError:
            found[path] = -1
    return found


def cpuinfo():
    with open("/proc/cpuinfo") as file:
        return file.read()


def environment():
    return sorted(os.environ)


def processes():
    return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())


def product_on_the_gpu():
    x = torch.ones(16, 8, device="cuda")
    return float((x @ x.T).sum()), str(x.device)
"""


def test_a_sealed_cuda_worker_computes_on_the_gpu_and_sees_nothing_of_the_machine(tmp_path):
    path = tmp_path / "probes.py"
    path.write_text(SEALED_PROBES)
    transport = WorkerTransport(path, device="cuda")
    try:
        assert transport.fatal is None, transport.fatal
        student = Student(transport, device="cuda")
        assert student.call("product_on_the_gpu") == (16 * 16 * 8.0, "cuda:0")
        assert set(student.call("environment")) <= {"PATH", "HOME", "TMPDIR", "LANG", "CUDA_VISIBLE_DEVICES",
                                                     "CUDA_DEVICE_ORDER"}
        secrets = [str(ROOT / "solutions" / "attention.py"), str(ROOT / "tests" / "hidden"), str(tmp_path),
                   "/etc/passwd", "/etc/shadow", "/root/.bash_history", "/home"]
        assert {p: n for p, n in student.call("sizes", secrets).items() if n >= 0} == {}
        if pool.current().protections().mode in ("root", "userns"):
            host = [p for p in seal.MASKED_FILES if os.path.isfile(p)]
            assert {p: n for p, n in student.call("sizes", host).items() if n > 0} == {}
            assert "model name" not in student.call("cpuinfo")
            assert student.call("processes")[:1] == [1]
    finally:
        transport.close()


# ------------------------------------------------------------------ the GPU's memory, shared by every worker
# Put at the start of CausalAttention.forward: the whole GPU taken and held a while. `lift` lifts the cap the
# worker sets on PyTorch's allocator first (as an attack would); without it, the cap stops the tensor.
FILL_THE_GPU = """
if not globals().get("_HELD"):
    import time as _time
    if {lift}:
        torch.cuda.set_per_process_memory_fraction(1.0)
    _free, _ = torch.cuda.mem_get_info()
    globals()["_HELD"] = [torch.empty(int(_free * 0.9), dtype=torch.uint8, device="cuda")]
    _time.sleep(3)
"""


def filling_the_gpu(clean, lift):
    marker = "    def forward(self, x):\n"
    start = clean.index("class CausalAttention")
    at = clean.index(marker, start) + len(marker)
    code = "\n".join("        " + line if line else "" for line in FILL_THE_GPU.format(lift=lift).splitlines())
    return clean[:at] + code + "\n" + clean[at:]


def test_a_tensor_too_large_for_the_gpu_fails_within_its_own_share(grade, clean, maxima):
    """The worker caps PyTorch's allocator at the submission's memory limit: the tensor fails in its own step
    (a memory limit), and nothing of the GPU was taken from classmates."""
    result = grade(filling_the_gpu(clean, lift=False), device="cuda")
    steps = result.step_scores()
    assert steps["causal_attention"] < maxima["causal_attention"]
    assert all(steps[key] == maxima[key] for key in maxima if key not in ("causal_attention", "mha_wrapper")), steps
    failed = [test for test in result.tests if test.step == "causal_attention" and test.score < test.max_score]
    assert failed and all(test.limit is Limit.MEMORY for test in failed), [(t.name, t.limit) for t in failed]


def test_a_submission_that_takes_the_gpu_loses_its_step_and_its_classmates_lose_nothing(tmp_path, clean, maxima):
    """An attack lifts the allocator's cap and takes 90 % of the GPU's memory for 3 s, graded beside three
    correct files: the watchdog reads the driver's figure and stops its step (a GPU memory limit); a classmate
    whose step ran out of GPU memory meanwhile is graded again, and keeps full marks."""
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "hog.py").write_text(filling_the_gpu(clean, lift=True))
    for variant in VARIANTS[:6]:
        (folder / f"{variant.id}.py").write_text(variant.apply(clean))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), "--device", "cuda",
                           "--jobs", "7"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    total = sum(maxima.values())
    assert all(float(rows[v.id]["total"]) == total for v in VARIANTS[:6]), {k: r["total"] for k, r in rows.items()}
    hog = json.loads((out / "results" / "hog.json").read_text(encoding="utf-8"))
    lost = [test for test in hog["tests"] if test["score"] < test["max_score"]]
    assert lost and all(test["name"].startswith(("causal_attention", "mha_wrapper")) for test in lost), lost
    assert any("GPU memory limit" in test["output"] for test in lost), [test["output"][:300] for test in lost]
