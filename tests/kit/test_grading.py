"""End to end: the solution earns full marks, the stub zero, through the real sandboxed judge."""

import csv
import json
import subprocess
import sys

from grader.chapter import BY_KEY, STEP_KEYS, TOTAL_POINTS
from grader.paths import ROOT


def test_solution_gets_full_marks(grade, clean, maxima):
    result = grade(clean)
    failed = [(t.name, t.output) for t in result.tests if t.score < t.max_score]
    assert not failed, failed
    assert result.score == sum(maxima.values()) == TOTAL_POINTS
    assert not result.problems
    # What it cost on each side (make bench sums them): the judge's thread computed, the worker ran the checks.
    assert set(result.cpu) == {"judge", "worker"} and result.cpu["judge"] > 0.01 and result.cpu["worker"] > 0.01


def test_solution_notebook_gets_full_marks(grade, solution_notebook):
    result = grade(solution_notebook, name="attention.ipynb")
    assert result.score == TOTAL_POINTS, [(t.name, t.output) for t in result.tests if t.score < t.max_score]


def test_stub_gets_zero_with_a_message_per_test(grade, stub):
    result = grade(stub)
    assert result.score == 0
    for test in result.tests:
        assert "not implemented yet" in test.output or "is not defined" in test.output, (test.name, test.output)


def test_every_step_has_tests_of_public_and_hidden_kind(suite, maxima):
    for key in STEP_KEYS:
        kinds = {test.kind for test in suite if test.step == key}
        assert kinds == {"public", "hidden"}, key
        assert maxima[key] > 0
    assert all(test.name.startswith(f"{test.step}: ") for test in suite)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_cli_single_file_writes_gradescope_results(tmp_path):
    results = tmp_path / "r" / "results.json"
    done = run_cli("grade", "solutions/attention.py", "--out", str(tmp_path), "--results", str(results))
    assert done.returncode == 0, done.stderr
    data = json.loads(results.read_text())
    assert data["score"] == TOTAL_POINTS
    assert data["extra_data"]["cpu"]["worker"] > 0.01, data["extra_data"]["cpu"]
    for test in data["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility"}
        assert test["name"].split(":")[0] in STEP_KEYS
    assert "multihead_attention" in done.stdout  # the score table


def test_cli_sample_class(tmp_path):
    done = run_cli("grade", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert len(rows) == 12
    assert rows[0].keys() == {"submission", *STEP_KEYS, "total"}
    by_name = {row["submission"]: row for row in rows}
    assert float(by_name["ada_lovelace"]["total"]) == TOTAL_POINTS
    assert float(by_name["alan_turing"]["total"]) == TOTAL_POINTS
    assert float(by_name["grace_hopper"]["total"]) == TOTAL_POINTS
    assert float(by_name["frances_allen"]["total"]) == 0
    assert float(by_name["edsger_dijkstra"]["causal_attention"]) < BY_KEY["causal_attention"].points
    broken = json.loads((tmp_path / "results" / "ken_thompson.json").read_text())
    assert "SyntaxError" in broken["output"]
    assert 0 < broken["score"] < TOTAL_POINTS  # the blocks that parse are still graded
    for row in rows:
        assert (tmp_path / "results" / f"{row['submission']}.json").is_file()


def test_cli_bad_usage_exits_2(tmp_path):
    assert run_cli("grade", str(tmp_path / "missing.py")).returncode == 2
    assert run_cli("grade", str(tmp_path)).returncode == 2  # an empty folder
