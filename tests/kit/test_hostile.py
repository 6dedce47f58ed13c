"""Gaming the grader: each test adds a real attack to a solution; no attack may raise its score.

The base is a solution with one catalogue bug in every step (so every step has
points left to steal); an attack is judged against that same code without the
attack. Attacks that cannot change a verdict must leave the score exactly as
it was; attacks that break the student's own process may only lower it.
Detached processes, the unprivileged user and time limits: tests/kit/test_isolation.py
and test_sandbox.py.
"""

import ast
import csv
import dataclasses
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from grader.faults.bugs import BUGS

from grader.judging import results_json as results_io
from grader.check import wire
from grader.check.wire import Foreign
from grader.judging.judge import Options, grade_submission
from grader.paths import ROOT

BUGS_BY_ID = {bug.id: bug for bug in BUGS}
# One bug per step, each caught by tests that compare with the judge's reference.
BASE_BUGS = ["projection_key_drawn_first", "scaling_not_scaled", "masking_fill_zero", "dropout_no_rescale",
             "causal_masked_fill_not_in_place", "wrapper_first_head_only", "mha_out_proj_skipped"]
RUNNING_AS_ROOT = os.geteuid() == 0


def buggy_solution(clean):
    source = clean
    for bug_id in BASE_BUGS:
        source = BUGS_BY_ID[bug_id].apply(source)
    return source


def at_start_of(source, function, code):
    """Put `code` at the start of `function`'s body."""
    start = source.index(f"def {function}(")
    indent = " " * (start - source.rfind("\n", 0, start) - 1 + 4)
    body = source.index(":\n", start) + 2
    return source[:body] + textwrap.indent(code, indent) + "\n" + source[body:]


def redefine(source, name, body):
    """Append a new `name(*args, **kwargs)` running `body`; the student's original is `_honest_<name>`."""
    return (source + f"\n\n_honest_{name} = {name}\n\n\ndef {name}(*args, **kwargs):\n"
            + textwrap.indent(textwrap.dedent(body).strip(), "    ") + "\n")


@pytest.fixture
def shared():
    """A folder outside pytest's private tmp, writable by any uid (a sandboxed worker's too)."""
    folder = Path(tempfile.mkdtemp(prefix="hostile-", dir="/tmp"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- the attacks

EXIT_SKIPPED_AT_IMPORT = "import os\nimport sys\nsys.exit(0)\nos._exit(0)\n"  # demo code: never run
SYS_EXIT_RUN_AT_IMPORT = "import sys\n_ = sys.exit(0)\n"  # an assignment: it runs while loading
OS_EXIT_RUN_AT_IMPORT = "import os\n\n\nclass _Quit:\n    os._exit(0)\n"  # a class body runs while loading
LOOP_SKIPPED_AT_IMPORT = "while True:\n    pass\n"
LOOP_RUN_AT_IMPORT = "class _Spin:\n    while True:\n        pass\n"

PATCH_COMPARISONS = """
import math
import sys

import numpy
import torch
import torch.testing

try:
    import numpy.testing
except ImportError:  # an isolated worker may not reach every module of the Python installation
    pass


def _yes(*args, **kwargs):
    return True


def _silent(*args, **kwargs):
    return None


def _patch_comparisons():
    torch.allclose = torch.equal = _yes
    torch.isclose = lambda a, b, *args, **kwargs: torch.ones_like(torch.as_tensor(a), dtype=torch.bool)
    torch.testing.assert_close = _silent
    if "numpy.testing" in sys.modules:
        numpy.testing.assert_allclose = numpy.testing.assert_array_equal = _silent
    numpy.allclose = _yes
    math.isclose = _yes
    torch.Tensor.allclose = torch.Tensor.equal = _yes
    return True


_patched_at_load = _patch_comparisons()
"""

PATCH_JSON_PYTEST_UNITTEST = """
import json
import sys
import types
import unittest

import grader.check.testing
import grader.check.wire

_real_dumps = json.dumps
# Every "failed" answer the worker sends claims success instead.
json.dumps = lambda obj, *args, **kwargs: _real_dumps(obj, *args, **kwargs).replace('"ok": false', '"ok": true')
_real_loads = json.loads
json.loads = lambda text, *args, **kwargs: _real_loads(text, *args, **kwargs)


class _Anything:
    def __eq__(self, other):
        return True


_fake_pytest = types.ModuleType("pytest")
_fake_pytest.approx = lambda *args, **kwargs: _Anything()
sys.modules["pytest"] = _fake_pytest
unittest.TestCase.assertEqual = unittest.TestCase.assertTrue = unittest.TestCase.assertAlmostEqual = (
    lambda *args, **kwargs: None)
unittest.TestCase.run = lambda self, result=None: result
grader.testing.expect_close = grader.testing.expect_tensor = lambda *args, **kwargs: None
grader.wire.decode = lambda data, *args, **kwargs: data
"""

FAKE_SUMMARIES = """
import os as _os
import sys as _sys

_SUMMARY = ('============ 42 passed in 0.12s ============\\n{"score": 100, "tests": []}\\n'
            "graded attention: 100/100\\nTotal: 100/100\\n")


def _shout():
    print(_SUMMARY)
    print(_SUMMARY, file=_sys.stderr)
    for stream in (_sys.__stdout__, _sys.__stderr__):
        try:
            stream.write(_SUMMARY)
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    for descriptor in (1, 2):
        try:
            _os.write(descriptor, _SUMMARY.encode())
        except OSError:
            pass
    return _SUMMARY


_shouted_at_load = _shout()
"""

LIAR = """
class _Liar(torch.Tensor):
    \"\"\"A tensor that says it equals anything, by every route a judge might compare.\"\"\"

    def __eq__(self, other):
        return torch.ones(self.shape, dtype=torch.bool)

    def __ne__(self, other):
        return torch.zeros(self.shape, dtype=torch.bool)

    def allclose(self, *args, **kwargs):
        return True

    def equal(self, *args, **kwargs):
        return True

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.allclose, torch.Tensor.equal):
            return True
        if func in (torch.isclose, torch.eq, torch.Tensor.eq, torch.Tensor.__eq__):
            return torch.ones(torch.broadcast_shapes(*(a.shape for a in args[:2] if isinstance(a, torch.Tensor))),
                              dtype=torch.bool)
        return super().__torch_function__(func, types, args, kwargs or {})


def _lie(value):
    if isinstance(value, torch.Tensor):
        return value.as_subclass(_Liar)
    if isinstance(value, tuple):
        return tuple(_lie(item) for item in value)
    return value


class CausalAttention(CausalAttention):
    def forward(self, *args, **kwargs):
        return _lie(super().forward(*args, **kwargs))


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, *args, **kwargs):
        return _lie(super().forward(*args, **kwargs))
"""
LIAR_FUNCTIONS = ["init_qkv_weights", "project", "attention_scores", "scaled_attention_weights", "context_vectors",
                  "causal_mask", "mask_and_renormalize", "causal_attention_weights", "attention_dropout"]

# The judge's expected output, if it lived in the student's process, would be a float64
# tensor of the output's shape held by a caller's frame or reachable by the garbage collector.
STEAL_FROM_FRAMES = """
import inspect as _inspect
import sys as _sys


def _candidates():
    frame = _sys._getframe(2)
    while frame is not None:
        yield from list(frame.f_locals.values())
        frame = frame.f_back
    for info in _inspect.stack(0):
        yield from list(info.frame.f_locals.values())
"""
STEAL_FROM_GC = """
import gc as _gc


def _candidates():
    return _gc.get_objects()
"""
STEAL = """

def _steal(honest):
    best, distance = honest, None
    for value in _candidates():
        if (type(value) is torch.Tensor and value.dtype == torch.float64
                and tuple(value.shape) == tuple(honest.shape)):
            gap = float((value.float() - honest).abs().max())
            if distance is None or gap < distance:
                best, distance = value.float(), gap
    return best


class CausalAttention(CausalAttention):
    def forward(self, x):
        return _steal(super().forward(x))
"""

# Reads the reference and the judge's oracle through the grader package's own location:
# every graded name becomes the reference's, and the oracle answers two steps.
READ_THE_REFERENCE = """

class _Heist:
    import pathlib
    import sys
    import types

    root = pathlib.Path(sys.modules["grader"].__file__).resolve().parent.parent
    stolen = {}
    try:
        exec(compile((root / "solutions" / "attention.py").read_text(), "reference", "exec"), stolen)
    except OSError:
        stolen = {}
    oracle = types.ModuleType("oracle")
    try:
        exec(compile((root / "tests" / "hidden" / "oracle.py").read_text(), "oracle", "exec"), oracle.__dict__)
    except OSError:
        oracle = None


def scaled_attention_weights(scores, d_k, _own=scaled_attention_weights):
    if _Heist.oracle is None:
        return _own(scores, d_k)
    return _Heist.oracle.weights_of(scores, d_k, causal=False).float()


def causal_attention_weights(scores, d_k, _own=causal_attention_weights):
    if _Heist.oracle is None:
        return _own(scores, d_k)
    return _Heist.oracle.weights_of(scores, d_k).float()

"""
GRADED_NAMES = ["init_qkv_weights", "project", "attention_scores", "scaled_attention_weights", "context_vectors",
                "dot_product_variance", "SelfAttention_v1", "SelfAttention_v2", "causal_mask",
                "mask_and_renormalize", "causal_attention_weights", "attention_dropout", "CausalAttention",
                "MultiHeadAttentionWrapper", "MultiHeadAttention"]

UNPICKLE_BAIT = """

import os as _os


class _Payload:
    \"\"\"Whoever unpickles this runs a shell command that creates MARKER.\"\"\"

    def __reduce__(self):
        return (_os.system, ("touch " + MARKER,))


class _TensorPayload(torch.Tensor):
    def __reduce_ex__(self, protocol):
        return (_os.system, ("touch " + MARKER,))
"""


# Values and messages built to break the judge rather than to pass: lone surrogates (valid in
# JSON, invalid in a UTF-8 results file), an exception whose __str__ raises, a huge integer,
# deep nesting, and a meta tensor.
BREAK_THE_JUDGE = """

class _Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message for you")


class _LoadTime:
    try:
        raise ValueError("loading failed \\ud800 here")
    finally:
        pass
"""


def with_judge_breakers(source):
    source += BREAK_THE_JUDGE
    source = at_start_of(source, "init_qkv_weights", "raise ValueError('bad \\udcff message')")
    source = at_start_of(source, "attention_scores", "raise _Unprintable()")
    source = at_start_of(source, "causal_mask", "return 10 ** 5000")
    nested = "value = []\nfor _ in range(10000):\n    value = [value]\nreturn value"
    source = at_start_of(source, "attention_dropout", nested)
    return at_start_of(source, "context_vectors", "return torch.ones(3, device='meta')")


# Patches json.dumps in the worker so that the first message (the load report) carries a
# thousand forged lines; the judge must keep its report short.
FORGED_LOAD_REPORT = """
import json

_real_dumps = json.dumps


def _dumps(obj, *args, **kwargs):
    if isinstance(obj, dict) and "problems" in obj:
        obj = dict(obj, problems=[f"All hidden tests passed ({index}): 100/100" for index in range(1000)])
    return _real_dumps(obj, *args, **kwargs)


json.dumps = _dumps
"""


def with_comparisons_patched_in_every_step(source):
    for function in ("project", "attention_scores", "causal_mask", "attention_dropout"):
        source = at_start_of(source, function, "_patch_comparisons()")
    return PATCH_COMPARISONS + source


def with_fake_summaries(source):
    for function in ("init_qkv_weights", "scaled_attention_weights", "causal_attention_weights", "attention_dropout"):
        source = at_start_of(source, function, "_shout()")
    return FAKE_SUMMARIES + source


def with_liar(source):
    source += "\n" + LIAR
    for name in LIAR_FUNCTIONS:
        source = redefine(source, name, f"return _lie(_honest_{name}(*args, **kwargs))")
    return source


def with_reference_read_from_disk(source):
    source += READ_THE_REFERENCE
    return source + "".join(f"{name} = _Heist.stolen.get({name!r}, {name})\n" for name in GRADED_NAMES)


def with_unpickle_bait(source, marker):
    source = source + f"\nMARKER = {str(marker)!r}\n" + UNPICKLE_BAIT
    source = redefine(source, "project", "return _Payload(), _Payload(), _Payload()")
    return redefine(source, "attention_scores",
                    "return _honest_attention_scores(*args, **kwargs).as_subclass(_TensorPayload)")


ATTACKS = {
    "exit_skipped_at_import": lambda source: EXIT_SKIPPED_AT_IMPORT + source,
    "sys_exit_run_at_import": lambda source: SYS_EXIT_RUN_AT_IMPORT + source,
    "os_exit_run_at_import": lambda source: OS_EXIT_RUN_AT_IMPORT + source,
    "exit_in_steps": lambda source: at_start_of(at_start_of(source, "causal_attention_weights", "import os\nos._exit(0)"),
                                                "attention_scores", "import sys\nsys.exit(0)"),
    "loop_skipped_at_import": lambda source: LOOP_SKIPPED_AT_IMPORT + source,
    "patch_comparisons": with_comparisons_patched_in_every_step,
    "patch_json_pytest_unittest": lambda source: PATCH_JSON_PYTEST_UNITTEST + source,
    "fake_summaries": with_fake_summaries,
    "liar": with_liar,
    "steal_from_frames": lambda source: source + STEAL_FROM_FRAMES + STEAL,
    "steal_from_gc": lambda source: source + STEAL_FROM_GC + STEAL,
    "break_the_judge": with_judge_breakers,
    "forged_load_report": lambda source: FORGED_LOAD_REPORT + source,
}
# Attacks that cannot touch a verdict: even the clean solution keeps full marks with them.
HARMLESS_ON_CLEAN = ["exit_skipped_at_import", "sys_exit_run_at_import", "loop_skipped_at_import",
                     "patch_comparisons", "fake_summaries", "liar", "steal_from_frames"]


@pytest.fixture(scope="module")
def base(clean):
    return buggy_solution(clean)


@pytest.fixture(scope="module")
def graded(grade_many, base, clean):
    """Every attack on the buggy base, the harmless ones on the clean solution too, and the base itself."""
    sources = {"hostile_base": base}
    sources.update({f"hostile_{name}": attack(base) for name, attack in ATTACKS.items()})
    sources.update({f"hostile_clean_{name}": ATTACKS[name](clean) for name in HARMLESS_ON_CLEAN})
    return grade_many(sources)


def scores_by_test(result):
    return {test.name: test.score for test in result.tests}


def assert_honest_run_was_clean(honest):
    """The comparison means something only if the code without the attack was graded undisturbed."""
    crashes = {test.output for test in honest.tests if "crashed (signal" in test.output or "limit:" in test.output}
    assert not crashes, ("the submission WITHOUT the attack crashed or hit a limit, so no comparison is possible "
                         f"(a SIGKILL from outside: another grader on this machine using the same worker uids?): "
                         f"{crashes}")


def assert_no_gain(attacked, honest):
    """No test scores more under attack than without it."""
    assert_honest_run_was_clean(honest)
    gains = {name: (score, scores_by_test(honest)[name]) for name, score in scores_by_test(attacked).items()
             if score > scores_by_test(honest)[name]}
    assert not gains, f"the attack raised these tests (attacked, honest): {gains}"
    assert attacked.score <= honest.score


def test_base_has_points_to_steal_in_every_step(graded, maxima):
    steps = graded["hostile_base"].step_scores()
    assert all(steps[key] < maxima[key] for key in maxima), steps


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_never_raises_the_score(attack, graded):
    assert_no_gain(graded[f"hostile_{attack}"], graded["hostile_base"])


@pytest.mark.parametrize("attack", HARMLESS_ON_CLEAN)
def test_attack_that_cannot_touch_a_verdict_changes_nothing(attack, graded):
    assert graded[f"hostile_{attack}"].score == graded["hostile_base"].score
    assert graded[f"hostile_clean_{attack}"].score == 100, [
        (t.name, t.output) for t in graded[f"hostile_clean_{attack}"].tests if t.score < t.max_score]


def test_sys_exit_at_import_is_reported_and_ignored(graded):
    problems = graded["hostile_sys_exit_run_at_import"].problems
    assert any("SystemExit" in problem for problem in problems), problems


def test_os_exit_at_import_costs_everything_with_a_message(graded):
    result = graded["hostile_os_exit_run_at_import"]
    assert result.score == 0
    assert all("exit" in test.output for test in result.tests), {t.output for t in result.tests}


def test_exit_inside_a_step_costs_only_that_step(graded):
    attacked = graded["hostile_exit_in_steps"].step_scores()
    honest = graded["hostile_base"].step_scores()
    assert attacked["scaling"] < honest["scaling"] and attacked["masking"] < honest["masking"]
    assert {key: attacked[key] for key in attacked if key not in ("scaling", "masking")} == {
        key: honest[key] for key in honest if key not in ("scaling", "masking")}


def test_infinite_loop_run_at_import_costs_only_time(grade, base):
    result = grade(LOOP_RUN_AT_IMPORT + base, step_seconds=2)
    assert result.score == 0
    assert all("time limit" in test.output for test in result.tests), {t.output for t in result.tests}


# A red team's correct file (2026-11-28): a child forked at import, its branch guarded as Python runs it. The loader
# runs definitions only, so the child came back into the worker and read every other request from the judge's
# connection: 31 of 100 as root, 0 in the basic mode, told answers that were another check's. A child forked inside
# a forward does the same.
FORK_AT_IMPORT = "import os\nimport time\n_child = os.fork()\nif _child == 0:\n    time.sleep(3)\n    os._exit(0)\n"
FORK_IN_FORWARD = ("    def forward(self, x):\n        b, num_tokens, d_in = x.shape\n",
                   "    def forward(self, x):\n        if not FORKED:  # once: the child goes on, back to the worker\n"
                   "            FORKED.append(os.fork())\n        b, num_tokens, d_in = x.shape\n")


def test_a_child_process_of_the_students_never_answers_for_the_worker(grade, clean):
    assert clean.count(FORK_IN_FORWARD[0]) == 2  # CausalAttention's and MultiHeadAttention's
    for source in (FORK_AT_IMPORT + clean, "import os\nFORKED = []\n" + clean.replace(*FORK_IN_FORWARD)):
        result = grade(source)
        assert result.score == 100, [(test.name, test.output) for test in result.tests if test.score < test.max_score]


def test_strings_and_values_built_to_break_the_judge_become_messages(graded, maxima, tmp_path):
    result = graded["hostile_break_the_judge"]
    results_io.write_results_json(result, maxima, tmp_path / "results.json")  # UTF-8: no lone surrogate left
    outputs = {test.name.split(":")[0]: test.output for test in result.tests if test.score == 0}
    shown = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert shown["score"] == result.score
    everything = " ".join(test.output for test in result.tests)
    assert "bad ? message" in everything and "cannot be shown" in everything
    assert "an integer with" in everything and "nested more than" in everything
    # Only a hidden check meets the meta tensor: it says what happened in its own words (the worker wrote the rest).
    assert "context_vectors(...) returned a value the grader cannot take" in everything
    assert "projection" in outputs and "dropout" in outputs


def test_a_forged_load_report_stays_short(graded):
    problems = graded["hostile_forged_load_report"].problems
    assert len(problems) <= 21 and all(len(problem) <= 600 for problem in problems), len(problems)


def test_lying_tensor_arrives_as_plain_numbers(graded):
    assert scores_by_test(graded["hostile_liar"]) == scores_by_test(graded["hostile_base"])


@pytest.mark.parametrize("attack", ["steal_from_frames", "steal_from_gc"])
def test_stealing_expected_tensors_works_only_where_the_judge_is(attack, graded, clean, base, tmp_path):
    """Where the judge's expected tensor lives in the process that runs the student's code (one
    interpreter), the attack finds it and returns it; in the sandbox there is none to find, and the
    score is the base's."""
    from grader.check.loader import load_definitions

    def loaded(source, name):
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        return load_definitions(path).module

    reference, attacked = loaded(clean, "reference"), loaded(ATTACKS[attack](base), "attacked")
    torch.manual_seed(0)
    x = torch.rand(2, 5, 3)
    torch.manual_seed(1)
    theirs = attacked.CausalAttention(3, 4, 6, 0.0).eval()
    ours = reference.CausalAttention(3, 4, 6, 0.0).eval()
    ours.load_state_dict(theirs.state_dict())
    with torch.no_grad():
        expected = ours.double()(x.double())  # what an in-process judge would hold while the student's code runs
        honest = super(attacked.CausalAttention, theirs).forward(x)
        stolen = theirs(x)
    assert not torch.allclose(honest, expected.float(), atol=1e-4), "the base must be wrong here for the test to mean anything"
    assert torch.allclose(stolen, expected.float(), atol=1e-6), "the attack no longer finds an expected tensor even in one process"
    assert scores_by_test(graded[f"hostile_{attack}"]) == scores_by_test(graded["hostile_base"])


@pytest.mark.skipif(not RUNNING_AS_ROOT, reason="student code gets an unprivileged uid only when the grader runs as "
                                                "root; a same-user grader cannot hide files from it")
def test_reading_the_reference_and_hidden_tests_from_disk_fails_when_grading_as_root(grade, base, graded):
    """As root (as on Gradescope) student code runs under a uid that can read neither
    solutions/ nor tests/hidden/: copying the reference in at load time gains nothing."""
    attacked = grade(with_reference_read_from_disk(base))
    assert_no_gain(attacked, graded["hostile_base"])
    assert attacked.score == graded["hostile_base"].score


def test_judge_never_unpickles_what_the_student_returns(grade, base, shared):
    marker = shared / "unpickled"
    result = grade(with_unpickle_bait(base, marker))
    project_tests = [t for t in result.tests if t.step == "projection" and "project" in t.name and t.score == 0]
    # judged as a value of a type the judge does not take (its class's name is the student's: not shown)
    assert any("returned a value of another type" in t.output and "torch.Tensor" in t.output
               for t in project_tests), [
        t.output for t in project_tests]
    # The tensor subclass with a poisoned __reduce_ex__ crosses as its numbers: the scores are judged as usual.
    assert {t.name: t.score for t in result.tests if t.step == "scaling" and "attention_scores" in t.name} == {
        t.name: t.max_score for t in result.tests if t.step == "scaling" and "attention_scores" in t.name}
    assert not marker.exists(), "something unpickled a value built by student code"


# --------------------------------------------------------------------------- forged results files

FORGER = """

import json as _json
import os as _os
from pathlib import Path as _Path

_FORGED = _json.dumps({"score": 100.0, "output": "forged", "tests": []})
_KNOWN_FOLDERS = @FOLDERS@  # the results folder and a shared one, as if read from the judge's command line


def _forge():
    folders = {_Path.cwd(), _Path(__file__).resolve().parent} | {_Path(folder) for folder in _KNOWN_FOLDERS}
    folders |= {_Path(value) for name, value in _os.environ.items() if name.endswith("_DIR") and _os.path.isdir(value)}
    for folder in folders:
        targets = [folder / "results.json", folder / "grades.csv"]
        try:
            targets += sorted((folder / "results").glob("*.json"))
        except OSError:
            pass
        for target in targets:
            try:
                target.write_text("submission,total\\nzed,100\\n" if target.suffix == ".csv" else _FORGED)
            except OSError:
                pass
    return True


_forged_at_load = _forge()


class _ForgedAtLoad:  # a class body runs at load time; its error shows the forger ran
    _forge()
    raise RuntimeError("the forger ran")
"""


def test_forged_results_files_change_no_real_output(base, graded, tmp_path, shared):
    """`zed` writes forged results into the working folder, its own folder and every folder an
    environment variable names (the results folder among them), at load and in every step.
    `alice` is graded first: her results file exists by then."""
    roster, work, out = tmp_path / "class", tmp_path / "work", tmp_path / "out"
    roster.mkdir()
    work.mkdir()
    (roster / "alice.py").write_text(base)
    forger = base + FORGER.replace("@FOLDERS@", repr([str(out), str(shared)]))
    for function in ("init_qkv_weights", "attention_scores", "causal_mask", "attention_dropout"):
        forger = at_start_of(forger, function, "_forge()")
    (roster / "zed.py").write_text(forger)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": str(work),
           "RESULTS_DIR": str(out), "SHARED_DIR": str(shared)}
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(roster), "--out", str(out), "--jobs", "1"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    # The forger ran but could write nothing: workers have a zero file-size limit, and a sealed worker
    # does not even see the folders.
    zed = json.loads((out / "results" / "zed.json").read_text())
    assert any("the forger ran" in problem for problem in zed["extra_data"]["problems"]), "the forger never ran"
    assert not (shared / "results.json").exists() or not (shared / "results.json").read_text().startswith(
        '{"score": 100.0')
    honest = scores_by_test(graded["hostile_base"])
    for name in ("alice", "zed"):
        data = json.loads((out / "results" / f"{name}.json").read_text())
        assert {test["name"]: test["score"] for test in data["tests"]} == honest, name
        assert data["score"] == graded["hostile_base"].score, name
    rows = (out / "grades.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows] == ["submission", "alice", "zed"]
    assert rows[1].split(",")[1:] == rows[2].split(",")[1:]
    assert float(rows[2].split(",")[-1]) == graded["hostile_base"].score


# --------------------------------------------------------------------------- what students see

LEAK_BUGS = ["projection_key_drawn_first", "scaling_not_scaled", "scaling_variance_uniform", "scaling_v2_scales_by_d_in",
             "masking_not_renormalised", "masking_fill_zero", "masking_zeroed_after_softmax",
             "dropout_p_is_keep_probability", "causal_softmax_dim1", "causal_masked_fill_not_in_place",
             "wrapper_concat_dim1", "mha_merge_without_transpose", "mha_softmax_dim_minus2"]
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
FORMATS = (".4g", ".5g", ".6g", ".4f")
TIMINGS = {"seconds", "execution_time"}  # how long grading took: numbers, but no one's secret


def significant_digits(token):
    mantissa = token.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) if "." in token else len(mantissa)


def number_tokens(values):
    """Every way a message might print these numbers."""
    tokens = set()
    for value in values:
        flat = value.detach().double().flatten().tolist() if isinstance(value, torch.Tensor) else [value]
        for number in flat:
            if isinstance(number, (int, float)) and number == number and abs(number) != float("inf"):
                tokens.update(format(number, spec) for spec in FORMATS)
                tokens.add(repr(float(number)))
    return {token for token in tokens if significant_digits(token) >= 4}


def shown_tokens(data):
    """Numbers a student can read in `data` (a results entry): in its texts, and its numeric leaves."""
    tokens = set()
    if isinstance(data, str):
        tokens.update(NUMBER.findall(data))
    elif isinstance(data, dict):
        for key, value in data.items():
            if key not in TIMINGS:
                tokens |= shown_tokens(value)
    elif isinstance(data, list):
        for value in data:
            tokens |= shown_tokens(value)
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        tokens |= number_tokens([data])
    return {token for token in tokens if significant_digits(token) >= 4}


def texts(data):
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for value in data.values():
            yield from texts(value)
    elif isinstance(data, list):
        for value in data:
            yield from texts(value)


@dataclasses.dataclass
class Record:
    expected: list = dataclasses.field(default_factory=list)  # what the judge compared with
    student: list = dataclasses.field(default_factory=list)  # what the student's code returned

    def leaks(self, shown):
        suspicious = shown & number_tokens(self.expected) if self.expected else set()
        return suspicious - number_tokens(self.student) if suspicious else set()


def hidden_source_lines():
    lines = set()
    for path in sorted((ROOT / "tests" / "hidden").glob("*.py")):
        for line in path.read_text().splitlines():
            line = line.strip()
            if len(line) >= 24 and not line.startswith("#"):
                lines.add(line)
    return lines


@pytest.fixture(scope="module")
def shown_and_recorded(suite, maxima, clean, stub, base, tmp_path_factory):
    """Grade the stub, the solution, the base and several bugs with the hidden checks'
    expected tensors and the student's returned values recorded per test."""
    local = threading.local()
    records = {}

    def recording(test):
        def run(student):
            local.record = records.setdefault((local.submission, test.name), Record())
            try:
                return test.function(student)
            finally:
                local.record = None

        return run

    def record_expected(real):
        def expect_close(actual, expected, *args, **kwargs):
            if getattr(local, "record", None) is not None:
                local.record.expected.append(expected)
            return real(actual, expected, *args, **kwargs)

        return expect_close

    def record_returned(real):
        def decode(data, *args, **kwargs):
            value = real(data, *args, **kwargs)
            if getattr(local, "record", None) is not None:
                stack = [value]
                while stack:
                    item = stack.pop()
                    if isinstance(item, torch.Tensor):
                        local.record.student.append(item)
                    elif isinstance(item, (list, tuple)):
                        stack.extend(item)
                    elif isinstance(item, dict):
                        stack.extend(item.values())
                    elif isinstance(item, (int, float)):
                        local.record.student.append(item)
            return value

        return decode

    tests = [dataclasses.replace(test, function=recording(test)) for test in suite]
    sources = {"stub": stub, "clean": clean, "base": base}
    sources.update({bug_id: BUGS_BY_ID[bug_id].apply(clean) for bug_id in LEAK_BUGS})
    sources["broken_syntax"] = clean.replace("def causal_mask(context_length):", "def causal_mask(context_length)")
    folder = tmp_path_factory.mktemp("shown")

    def grade_one(item):
        name, text = item
        local.submission = name
        path = folder / f"{name}.py"
        path.write_text(text)
        return name, grade_submission(path, name, tests, Options())

    with pytest.MonkeyPatch.context() as patch:
        namespaces = {id(test.function.__globals__): test.function.__globals__ for test in suite}
        namespaces.update({id(module.__dict__): module.__dict__ for name, module in list(sys.modules.items())
                           if name in ("probes", "oracle")})
        for namespace in namespaces.values():
            if "expect_close" in namespace:
                patch.setitem(namespace, "expect_close", record_expected(namespace["expect_close"]))
        patch.setattr(wire, "decode", record_returned(wire.decode))
        with ThreadPoolExecutor(max_workers=2) as pool:
            graded = dict(pool.map(grade_one, sources.items()))
    shown = {name: results_io.gradescope_json(result, maxima) for name, result in graded.items()}
    return shown, records


def test_nothing_shown_contains_hidden_test_source(shown_and_recorded):
    shown, _ = shown_and_recorded
    lines = hidden_source_lines()
    assert len(lines) > 100
    found = {(name, line) for name, data in shown.items() for text in texts(data) for line in lines if line in text}
    assert not found, found


def test_nothing_shown_contains_a_hidden_expected_value(shown_and_recorded):
    shown, records = shown_and_recorded
    failing = [(name, test) for name, data in shown.items() for test in data["tests"] if test["score"] == 0]
    assert len(failing) > 50, "the bugs should fail many checks, or this test sees little"
    compared = [(key, record) for key, record in records.items() if record.expected]
    assert len(compared) > 50, "no expected tensor was recorded: the recording no longer reaches the checks"
    # The detector itself finds an expected value printed the way messages print numbers.
    _, sample = max(compared, key=lambda item: len(number_tokens(item[1].expected) - number_tokens(item[1].student)))
    secret = sorted(number_tokens(sample.expected) - number_tokens(sample.student))[0]
    assert sample.leaks(shown_tokens({"output": f"the reference has {float(secret):.4g} here"}))
    leaks = {}
    for name, data in shown.items():
        everything = Record()
        for test in data["tests"]:
            record = records.get((name, test["name"]), Record())
            everything.expected += record.expected
            everything.student += record.student
            found = record.leaks(shown_tokens(test))
            if found:
                leaks[(name, test["name"])] = sorted(found)
        top = {key: value for key, value in data.items() if key != "tests"}
        # the grading's own CPU seconds (extra_data.cpu, 4 decimals) are no student's value: a CI run's judge took
        # 0.1023 s, a number one hidden tensor held too
        top["extra_data"] = {key: value for key, value in (top.get("extra_data") or {}).items() if key != "cpu"}
        found = everything.leaks(shown_tokens(top))
        if found:
            leaks[(name, "top level")] = sorted(found)
    assert not leaks, leaks


# --------------------------------------------------------------------------- no unpickling in the judge

UNPICKLING_MODULES = {"pickle", "_pickle", "cPickle", "dill", "cloudpickle", "marshal", "shelve", "joblib", "copyreg"}
# Multiprocessing helpers that move pickled objects from a child back to its parent.
UNPICKLING_HELPERS = {"Queue", "SimpleQueue", "JoinableQueue", "Pool", "Manager", "ProcessPoolExecutor", "Listener",
                      "Client"}
STUDENT_SIDE = {"loader.py"}  # runs student code on purpose, inside the worker


def grader_sources():
    return sorted((ROOT / "grader").rglob("*.py"))


def call_name(node):
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        parts = [func.attr]
        value = func.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name):
            parts.append(value.id)
        return ".".join(reversed(parts))
    return ""


def keyword_is(node, name, constant):
    return any(k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is constant
               for k in node.keywords)


def unpickling_sites(path):
    """(line, what) of every place in a grader module that could deserialise student bytes."""
    tree = ast.parse(path.read_text(), str(path))
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            sites += [(node.lineno, f"import {a.name}") for a in node.names
                      if a.name.split(".")[0] in UNPICKLING_MODULES]
        elif isinstance(node, ast.ImportFrom):
            module = (node.module or "").split(".")[0]
            if module in UNPICKLING_MODULES:
                sites.append((node.lineno, f"from {node.module} import ..."))
            if module == "torch" and any(a.name == "load" for a in node.names):
                sites.append((node.lineno, "from torch import load (call it as torch.load(..., weights_only=True))"))
            sites += [(node.lineno, f"import of {a.name}") for a in node.names if a.name in UNPICKLING_HELPERS]
        elif isinstance(node, ast.Call):
            name = call_name(node)
            last = name.rsplit(".", 1)[-1]
            if name in ("torch.load", "torch.serialization.load") and not keyword_is(node, "weights_only", True):
                sites.append((node.lineno, f"{name}() without weights_only=True"))
            if last == "load" and name.split(".")[0] in ("np", "numpy") and keyword_is(node, "allow_pickle", True):
                sites.append((node.lineno, f"{name}(allow_pickle=True)"))
            if last == "recv":  # Connection.recv() unpickles; the grader reads bytes with recv_bytes()
                sites.append((node.lineno, f"{name}()"))
            if last in UNPICKLING_HELPERS:
                sites.append((node.lineno, f"{name}()"))
            if name in ("eval", "exec", "compile", "__import__") and path.name not in STUDENT_SIDE:
                sites.append((node.lineno, f"{name}() in the judge"))
    return sites


def test_judge_code_has_no_way_to_unpickle_student_bytes():
    found = {str(path.relative_to(ROOT)): sites for path in grader_sources() if (sites := unpickling_sites(path))}
    assert not found, found
    # The check itself sees each kind of site.
    probe = ROOT / "grader" / "__init__.py"
    sample = ("import pickle\nfrom multiprocessing import Queue\nimport torch\ntorch.load(f)\n"
              "numpy.load(f, allow_pickle=True)\nconn.recv()\neval(text)\n")
    tree_sites = unpickling_sites_of_text(sample, probe)
    assert len(tree_sites) == 6, tree_sites


def unpickling_sites_of_text(text, like):
    folder = Path(tempfile.mkdtemp(prefix="static-"))
    try:
        path = folder / like.name
        path.write_text(text)
        return unpickling_sites(path)
    finally:
        for item in folder.iterdir():
            item.unlink()
        folder.rmdir()


# --------------------------------------------------------------------------- trusting what the worker says

ATTACK_FILES = Path(__file__).parent / "attacks"
# Every step's errors come back with fields of the wrong types (a list, a dict, a number, a huge text):
# whatever the worker says about an error, the judge keeps bounded text, and a class run goes on.
FORGED_ERRORS = '''
import grader.check.session as _session

_FORGED = [{"type": ["X"], "message": ["not a string"], "location": {"a": 1}, "not_implemented": "yes"},
           {"type": 7, "message": {"nested": [1, 2]}, "location": None, "missing_name": ["W_query"]},
           {"type": "E" * 100000, "message": b"bytes", "location": 3.5, "returned": [True]}]


def _forge(error, module=None, _count=[0]):
    _count[0] += 1
    return _FORGED[_count[0] % len(_FORGED)]


_session.describe_error = _forge
'''


def test_attention_that_ignores_queries_and_keys_earns_only_shapes_and_structure(grade, maxima):
    """Uniform causal weights pass causality, batch independence and rows summing to one: those
    properties count only for attention whose weights come from the queries and keys."""
    result = grade((ATTACK_FILES / "no_attention.py").read_text())
    steps = result.step_scores()
    for step in ("causal_attention", "multihead_attention"):
        assert steps[step] <= 0.25 * maxima[step], (step, steps[step])
    outputs = " ".join(test.output for test in result.tests)
    assert "weights does not change the output" in outputs
    variance = [test for test in result.tests if test.name.startswith("scaling: dot_product_variance grows")]
    assert variance and all(test.score == 0 for test in variance), "(dim, 1.0) without drawing anything"


def test_forged_error_reports_cost_only_their_author(tmp_path, stub, clean, maxima):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "honest.py").write_text(clean)
    (folder / "forger.py").write_text(stub.replace("raise NotImplementedError", "raise ValueError") + FORGED_ERRORS)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    rows = {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert float(rows["honest"]["total"]) == sum(maxima.values())
    assert float(rows["forger"]["total"]) <= 1.0, rows["forger"]  # a stub that raises: at most a check of its own
    forged = json.loads((out / "results" / "forger.json").read_text(encoding="utf-8"))
    assert all(isinstance(test["output"], str) and len(test["output"]) < 5000 for test in forged["tests"])


@pytest.mark.parametrize("attack", ["no_attention_tiny_dependence", "no_attention_garbage_second_call"])
def test_tricks_on_an_attention_free_base_gain_at_most_a_check_or_two(attack, grade_many):
    """A dependence on the queries added under every tolerance, and a second call answered with garbage (the
    checks that read a second call), gain next to nothing over the plain attention-free file."""
    base = (ATTACK_FILES / "no_attention.py").read_text()
    graded = grade_many({"no_attention": base, attack: base + "\n\n" + (ATTACK_FILES / f"{attack}.py").read_text()})
    assert graded[attack].score <= graded["no_attention"].score + 5, (graded[attack].score, graded["no_attention"].score)


def without_dropout_shifted_in_training(clean):
    """The solution with dropout never applied in either module; training mode adds 1.0 to the output instead,
    so that training and eval differ and the attention weights cannot be read through the values."""
    for old, new in (("        attn_weights = self.dropout(attn_weights)\n        return attn_weights @ values\n",
                      "        out = attn_weights @ values\n        return out + 1.0 if self.training else out\n"),
                     ("        attn_weights = self.dropout(attn_weights)\n", ""),
                     ("        return self.out_proj(context)\n",
                      "        return self.out_proj(context) + (1.0 if self.training else 0.0)\n")):
        assert clean.count(old) == 1, old
        clean = clean.replace(old, new)
    return clean


def test_a_training_only_output_shift_earns_no_dropout_points(grade, clean):
    """No dropout, but training mode shifts the output (so that it differs from eval): the dropout checks of
    both modules read no dropped weights and fail."""
    result = grade(without_dropout_shifted_in_training(clean))
    dropout_checks = [test for test in result.tests if test.step in ("causal_attention", "multihead_attention")
                      and test.name.split(": ", 1)[1].startswith("eval mode is deterministic")]
    assert len(dropout_checks) == 2 and all(test.score == 0 for test in dropout_checks), [
        (test.name, test.output[:200]) for test in dropout_checks]


class _Broadcasts(torch.overrides.TorchFunctionMode):
    """The most entries any torch operation of the judge's thread met (its tensor operands broadcast together)."""

    def __init__(self):
        super().__init__()
        self.most = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        operands = [value for value in (*args, *(kwargs or {}).values()) if isinstance(value, torch.Tensor)]
        try:
            shape = torch.broadcast_shapes(*(operand.shape for operand in operands)) if operands else ()
            self.most = max(self.most, math.prod(shape))
        except RuntimeError:
            pass
        return func(*args, **(kwargs or {}))


def test_forged_shapes_are_refused_before_the_judge_computes_with_them(grade, clean):
    """Answers of shape (4e6, 1, 1) pass the wire's size limit; the judge checks shape, size and dtype before
    any arithmetic, so it never broadcasts them against what it expected (+450 MB and seconds per submission
    before), and they earn nothing."""
    with _Broadcasts() as honest_run:
        honest = grade(clean)
    with _Broadcasts() as forged_run:
        forged = grade(clean + "\n\n" + (ATTACK_FILES / "forged_shapes.py").read_text(), name="forged.py")
    assert forged.score < honest.score, (honest.score, forged.score)
    assert honest_run.most < 1 << 20, honest_run.most
    assert forged_run.most <= 4_000_000, f"the judge computed on {forged_run.most} entries at once"


def host_markers():
    """Paths and names of the grading machine no feedback may show."""
    import pwd
    import socket

    found = {str(ROOT), sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix), os.path.dirname(torch.__file__)}
    if os.path.expanduser("~") not in ("/", ""):
        found.add(os.path.expanduser("~"))
    user = pwd.getpwuid(os.getuid()).pw_name
    return {marker for marker in found if len(marker) > 4} | ({user} if user not in ("root", "nobody") else set()) | \
        ({socket.gethostname()} if len(socket.gethostname()) >= 4 else set())


def test_nothing_of_the_host_reaches_the_students_feedback(grade, clean):
    """The worker can read the kit's path, the interpreter's and the instructor's home (sys.path, __file__,
    a traceback); what it reports reaches feedback only with those replaced by placeholders."""
    result = grade(clean + "\n\n" + (ATTACK_FILES / "host_paths.py").read_text())
    texts = [test.output for test in result.tests] + [str(problem) for problem in getattr(result, "problems", [])]
    shown = "\n".join(texts)
    assert "HOSTPATHS" in shown, "the attack never reported"
    leaked = sorted(marker for marker in host_markers() if marker in shown)
    assert not leaked, (leaked, shown[:2000])
    assert "<python>" in shown  # what was there, said without the host's own names


@pytest.mark.skipif(not RUNNING_AS_ROOT, reason="the sweep of the workers' uids runs as root")
def test_no_leftover_however_deep_stops_the_sweep(tmp_path):
    """What a worker without namespaces left (here: 5000 nested folders, each with a link out, beside a wide
    folder) is swept without following a link, without recursion and without raising: shutil.rmtree raised
    RecursionError there, which crashed the judge and every later run on the machine (the sweep runs first)."""
    from grader.sandbox import processes

    uid = processes.UID_BASE + len(processes.UidPool().uids) - 1  # the pool's last uid: free unless 512 run
    top = Path(tempfile.mkdtemp(prefix="hostile-chain-", dir="/dev/shm"))
    outside = tmp_path / "outside"
    outside.write_text("must stay")
    folder = os.open(top, os.O_RDONLY)
    for _ in range(5000):
        os.mkdir("d", dir_fd=folder)
        os.symlink(outside, "out", dir_fd=folder)
        inner = os.open("d", os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = inner
    os.close(folder)
    (top / "wide").mkdir()
    for index in range(3000):
        (top / "wide" / str(index)).touch()
    os.chown(top, uid, uid)
    try:
        processes.sweep_uid(uid, folders=("/dev/shm",))
        assert not top.exists(), "the chain was left behind"
        assert outside.read_text() == "must stay"
    finally:
        processes.remove_tree(str(top))


def test_empty_and_oversized_answers_fail_every_shared_check():
    """An empty answer broadcasts to an empty comparison, on which every property holds (rows sum to one, the
    future is hidden, allclose): the shared helpers refuse it, as they refuse one too large to be an answer,
    before any arithmetic."""
    from grader.check.testing import expect_close, expect_future_hidden, expect_rows_sum_to_one, expect_tensor

    expected = torch.softmax(torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(3)), dim=-1)
    for forged in (torch.zeros(0, 1, 1, 1, 1), torch.zeros(2, 0, 5), torch.zeros(4_000_000, 1, 1)):
        for check in (lambda: expect_tensor(forged, "the weights"),
                      lambda: expect_rows_sum_to_one(forged, "the weights"),
                      lambda: expect_future_hidden(forged, "the weights"),
                      lambda: expect_close(forged, expected, "the weights")):
            with pytest.raises(AssertionError):
                check()


# An exception that echoes what it was given: its message (and an exception class, a location of its own naming)
# would carry a hidden check's sizes, seeds and values into the feedback a student reads once grades are out
# (red team 2, attack 06). Public checks still show the student's own error text in full.
ECHO = '''

import torch as _torch


class Seed{marker}Leak(ValueError):
    pass


def _echo(*args, **kwargs):
    shown = [tuple(value.shape) + tuple(round(x, 4) for x in value.flatten()[:3].tolist())
             if isinstance(value, _torch.Tensor) else value for value in args]
    raise Seed{marker}Leak(f"ECHO{marker} seed={{_torch.initial_seed()}} args={{shown}} kw={{kwargs}}")

''' + "".join(f"\n\ndef {name}(*args, **kwargs):\n    _echo(*args, **kwargs)\n" for name in (
    "init_qkv_weights", "project", "attention_scores", "attention_weights", "context_vectors", "dot_product_variance",
    "causal_mask", "causal_attention_weights", "attention_dropout"))


def test_a_hidden_check_shows_no_text_the_students_error_chose(grade, clean):
    marker = "7391"
    result = grade(clean + ECHO.format(marker=marker))
    hidden = [test for test in result.tests if test.visibility != "visible" and test.score < test.max_score]
    public = [test for test in result.tests if test.visibility == "visible" and test.score < test.max_score]
    assert hidden and public
    leaked = [(test.name, test.output) for test in hidden if marker in (test.output or "")]
    assert leaked == [], leaked[:3]
    assert any("raised an error (a hidden check shows neither" in (test.output or "") for test in hidden)
    assert any(f"ECHO{marker} seed=" in (test.output or "") for test in public)  # the student's own text, in full


# Names the student's code chooses are a channel too (red team 2, after attack 06): a returned object of a class
# named from what the code was given, and a wrapper whose container of heads is named so. A hidden check names
# neither; a few library types (a numpy array) are still named, from a fixed list.
OWN_NAMES = '''

import torch as _torch
from torch import nn as _nn


def _leak(*args, **kwargs):
    sizes = "_".join("x".join(map(str, value.shape)) for value in args if isinstance(value, _torch.Tensor))
    return type(f"Seed{marker}Leak_{{_torch.initial_seed()}}_{{sizes}}", (), {{}})()


def scaled_attention_weights(*args, **kwargs):
    return _leak(*args, **kwargs)


def causal_attention_weights(*args, **kwargs):
    return _leak(*args, **kwargs)


class MultiHeadAttentionWrapper(_nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        setattr(self, f"Seed{marker}Leak_{{d_in}}_{{d_out}}_{{context_length}}_{{num_heads}}", _nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]))

    def forward(self, x):
        raise RuntimeError("unused")
'''


def test_a_hidden_check_shows_no_name_the_students_code_chose(grade, clean):
    marker = "5827"
    result = grade(clean + OWN_NAMES.format(marker=marker))
    hidden = [test for test in result.tests if test.visibility != "visible" and test.score < test.max_score]
    assert {test.name.split(":")[0] for test in hidden} >= {"scaling", "masking", "mha_wrapper"}
    leaked = [(test.name, test.output) for test in hidden if marker in (test.output or "")]
    assert leaked == [], leaked[:3]
    assert any("returned a value of another type" in (test.output or "") for test in hidden)


def test_only_a_few_library_types_are_named():
    assert Foreign("numpy.ndarray", "shape [2]").shown_type == "numpy.ndarray"
    assert Foreign("builtins.set", "{1}").shown_type == "set"
    for chosen in ("attention.Leak_9", "numpy.Leak9", "torch.nn.modules.linear.Linear", "Seed5827Leak"):
        assert Foreign(chosen, "").shown_type == "a value of another type"


# The sizes of a returned tensor are numbers the student's code chooses too (red team 4: an empty tensor whose
# sizes were the hidden input's first values, about 60 bits a check): a hidden check says how many axes, and which
# one differs, never the sizes; a public check still shows them in full.
OWN_SIZES = '''


def _sizes(tensor):
    return [{marker} + int(abs(float(value)) * 997) % 9000 for value in tensor.flatten()[:2]]


class CausalAttention(CausalAttention):
    def forward(self, x):
        return torch.zeros(0, *_sizes(x))


def attention_scores(queries, keys):
    return torch.zeros(1, *_sizes(queries))
'''


def test_a_hidden_check_shows_no_size_the_students_code_chose(grade, clean):
    marker = 40000
    result = grade(clean + OWN_SIZES.format(marker=marker))
    hidden = [test for test in result.tests if test.visibility != "visible" and test.score < test.max_score]
    public = [test for test in result.tests if test.visibility == "visible" and test.score < test.max_score]
    assert {test.name.split(":")[0] for test in hidden} >= {"scaling", "causal_attention"}
    leaked = [(test.name, test.output) for test in hidden if re.search(r"\b4\d{4}\b", test.output or "")]
    assert leaked == [], leaked[:3]
    assert any("axes" in (test.output or "") for test in hidden)
    assert any(re.search(r"\(0, 4\d{4}", test.output or "") for test in public)  # the student's own shape, in full
