"""Student code is untrusted: it cannot stop the grader, fake a verdict, or cost more than its step."""

import json
import zipfile

import pytest

from grader.check.loader import SubmissionError, read_chunks
from grader.cohort.submissions import collect


def inject(clean, function, code):
    """Put `code` at the start of `function`'s body."""
    start = clean.index(f"def {function}(")
    indent = " " * (start - clean.rfind("\n", 0, start) - 1 + 4)
    body = clean.index(":\n", start) + 2
    return clean[:body] + "".join(f"{indent}{line}\n" for line in code.splitlines()) + clean[body:]


def scores(result):
    return result.step_scores()


def test_exit_at_import_is_ignored(grade, clean):
    result = grade("import sys\nsys.exit(0)\n" + clean)
    assert result.score == 100


def test_os_exit_inside_a_step_costs_that_step_only(grade, clean, maxima):
    result = grade(inject(clean, "causal_mask", "import os\nos._exit(0)"))
    steps = scores(result)
    assert steps["masking"] < maxima["masking"]
    assert all(steps[key] == maxima[key] for key in steps if key != "masking")
    failed = [t.output for t in result.tests if t.step == "masking" and t.score == 0]
    assert any("exited" in output for output in failed), failed


def test_sys_exit_inside_a_step_is_a_failure_not_a_crash(grade, clean, maxima):
    result = grade(inject(clean, "attention_dropout", "raise SystemExit(0)"))
    assert scores(result)["dropout"] == 0
    assert result.score == 100 - maxima["dropout"]


def test_hang_costs_only_its_step(grade, clean, maxima):
    result = grade(inject(clean, "attention_scores", "while True:\n    pass"), step_seconds=3)
    steps = scores(result)
    assert steps["scaling"] < maxima["scaling"]
    assert all(steps[key] == maxima[key] for key in steps if key != "scaling")
    assert any("time limit" in t.output for t in result.tests if t.step == "scaling")


def test_memory_hog_costs_only_its_step(grade, clean, maxima):
    hog = "hoard = []\nwhile True:\n    hoard.append(bytearray(100_000_000))"
    result = grade(inject(clean, "project", hog), memory_bytes=512 << 20)
    steps = scores(result)
    assert steps["projection"] < maxima["projection"]
    assert any("MemoryError" in t.output for t in result.tests if "project" in t.name and t.score == 0)
    assert all(steps[key] == maxima[key] for key in steps if key != "projection")


def test_patching_comparisons_in_its_own_process_changes_nothing(grade, clean, maxima):
    attack = ("import torch, math, numpy\n"
              "torch.allclose = lambda *a, **k: True\n"
              "torch.equal = lambda *a, **k: True\n"
              "torch.testing.assert_close = lambda *a, **k: None\n"
              "math.isclose = lambda *a, **k: True\n"
              "numpy.testing.assert_allclose = lambda *a, **k: None\n")
    buggy = clean.replace("return torch.softmax(scores / d_k**0.5, dim=-1)", "return torch.softmax(scores, dim=-1)")
    honest = grade(buggy)
    attacked = grade(attack + buggy)
    assert attacked.score == honest.score < 100


def test_prints_and_fake_summaries_do_not_matter(grade, clean):
    noisy = inject(clean, "causal_mask", 'print("=== 100 passed, 0 failed ===")\nprint(\'{"score": 100}\')')
    assert grade(noisy).score == 100


def test_lying_tensor_subclass_is_judged_by_its_numbers(grade, clean):
    liar = ("class Liar(torch.Tensor):\n"
            "    def __eq__(self, other):\n        return True\n"
            "    def allclose(self, *args, **kwargs):\n        return True\n\n\n")
    lying = inject(clean, "context_vectors", "return torch.zeros_like(values).as_subclass(Liar)")
    lying = lying.replace("def context_vectors(", liar + "def context_vectors(", 1)
    result = grade(lying)
    context_tests = [t for t in result.tests if "context vectors" in t.name]
    assert context_tests and all(t.score == 0 for t in context_tests)


def test_missing_name_costs_only_its_step(grade, clean, maxima):
    result = grade(clean.replace("def attention_dropout(", "def attention_dropout_typo("))
    assert scores(result)["dropout"] == 0
    assert result.score == 100 - maxima["dropout"]
    assert any("not defined" in t.output for t in result.tests if t.step == "dropout")


@pytest.mark.parametrize("content, expected", [
    (b"", "empty"),
    (b"\x00\x01\x02binary", "binary"),
    ("x = 'caf\u00e9'\n".encode("latin-1"), "UTF-8"),
])
def test_unreadable_files_get_a_clear_message(grade, content, expected):
    result = grade(content)
    assert result.score == 0
    assert expected in result.problems[0] and "attention.py" in result.problems[0]


def test_bad_notebooks_get_a_clear_message(tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    with pytest.raises(SubmissionError, match="not a valid notebook"):
        read_chunks(broken)
    other = tmp_path / "r.ipynb"
    other.write_text(json.dumps({"cells": [], "metadata": {"kernelspec": {"language": "R"}}}))
    with pytest.raises(SubmissionError, match="Python 3"):
        read_chunks(other)


def test_syntax_error_keeps_the_rest(grade, clean, maxima):
    broken = clean.replace("def causal_mask(context_length):", "def causal_mask(context_length)")
    result = grade(broken)
    assert any("SyntaxError" in problem and "line" in problem for problem in result.problems)
    steps = scores(result)
    assert steps["masking"] < maxima["masking"]
    assert steps["projection"] == maxima["projection"] and steps["multihead_attention"] == maxima[
        "multihead_attention"]


def test_zip_with_unsafe_paths_is_contained(tmp_path, clean):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("../escape.py", clean)
        zipped.writestr("alice/attention.py", clean)
        zipped.writestr("bob.py", clean)
        zipped.writestr("inner.zip", b"PK")
    collected = collect(archive)
    try:
        assert sorted(name for name, _ in collected.submissions) == ["alice", "bob"]
        assert not (tmp_path / "escape.py").exists()
        assert any("unsafe" in p for p in collected.problems) and any("nested" in p for p in collected.problems)
    finally:
        collected.cleanup()
