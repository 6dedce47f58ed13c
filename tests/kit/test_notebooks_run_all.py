""""Run All" on the untouched student notebook reaches every step's check cell.

Before: the chapter's demo cells called the stubs bare; the first one (step 1's demo) raised
NotImplementedError and Jupyter's "Run All" stopped there (the kernel aborts the queue after an error), so
the student never reached the later cells, nor any check after step 1.
Now: in the stub notebooks (exercises/attention.ipynb and the release's), a demo cell that calls a step runs
inside a guard (grader.build.exercises.DEMO_GUARD) that prints the stub's one line; the student's own errors
still stop the run with their traceback.
"""

import json
import zipfile

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from grader.build.exercises import calls_a_step, generated_files, guarded_demo
from grader.build.release import build
from grader.chapter import STEP_KEYS
from grader.check.loader import load_definitions

pytestmark = pytest.mark.kit


def run_all(path, cwd):
    """Run every cell in order and stop at the first error, as Jupyter's "Run All" does: {cell id: text}."""
    document = nbformat.read(path, as_version=4)
    NotebookClient(document, timeout=300, kernel_name="python3", allow_errors=False,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return {cell.id: "".join(output.get("text", "") + output.get("evalue", "") for output in cell.outputs)
            for cell in document.cells if cell.cell_type == "code"}


def demo_ids(document):
    return [cell["id"] for cell in document["cells"] if cell["id"].startswith("demo")]


def test_run_all_on_the_untouched_release_notebook_reaches_every_check(tmp_path):
    build(tmp_path / "dist")
    with zipfile.ZipFile(tmp_path / "dist" / "student.zip") as archive:
        archive.extractall(tmp_path)
    exercises = tmp_path / "student" / "exercises"
    texts = run_all(exercises / "attention.ipynb", exercises)  # raises CellExecutionError at a failing cell
    assert texts["checker-setup"].startswith("Checker ready"), texts["checker-setup"]
    for key in STEP_KEYS:
        assert "not implemented yet" in texts[f"{key}-check"], (key, texts[f"{key}-check"])
    demos = demo_ids(json.loads((exercises / "attention.ipynb").read_text()))
    assert len(demos) >= 7
    for cell in demos:
        assert texts[cell].startswith("demo skipped: ") and "is not implemented yet" in texts[cell], texts[cell]
        assert "Traceback" not in texts[cell]


def test_run_all_on_the_plain_stub_notebook_runs_to_the_end(tmp_path):
    path = tmp_path / "attention.ipynb"
    path.write_text(generated_files()["exercises/attention.ipynb"])
    texts = run_all(path, tmp_path)
    assert texts["demo-1"] == "demo skipped: projection: init_qkv_weights is not implemented yet\n", texts["demo-1"]


def test_a_students_own_error_in_a_demo_still_stops_with_its_traceback(tmp_path):
    source = "def causal_mask(n):\n    raise ValueError('my own bug')\n"
    demo = guarded_demo("print(causal_mask(4))")
    assert calls_a_step("print(causal_mask(4))") and not calls_a_step("x = torch.ones(3)")
    namespace = {}
    exec(source, namespace)
    with pytest.raises(ValueError, match="my own bug"):
        exec(demo, namespace)
    document = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source), nbformat.v4.new_code_cell(demo)])
    path = tmp_path / "own_error.ipynb"
    nbformat.write(document, path)
    with pytest.raises(CellExecutionError, match="my own bug"):
        run_all(path, tmp_path)


def test_the_guarded_demos_are_skipped_when_graded_and_the_definitions_load(tmp_path):
    """The grader's loader runs definitions only: a guarded demo is skipped like a bare one, and says nothing."""
    path = tmp_path / "attention.ipynb"
    path.write_text(generated_files()["exercises/attention.ipynb"])
    loaded = load_definitions(path)
    assert loaded.problems == [], loaded.problems
    assert callable(loaded.module.CausalAttention) and not hasattr(loaded.module, "sa_v2")
