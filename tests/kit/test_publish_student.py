"""The student release (dist/student, dist/student.zip): Otter self-checks that work, nothing secret."""

import importlib.util
import json
import shutil
import zipfile

import nbformat
import pytest
from nbclient import NotebookClient
from otter.nbmeta_config import NBMetadataConfig
from otter.test_files import create_test_file

from grader.build.exercises import code_sections, notebook
from grader.check.loader import load_definitions
from grader.build.release import with_checks
from grader.chapter import STEP_KEYS
from grader.paths import ROOT

pytestmark = pytest.mark.kit

# The leak checks of the committed student_template/ (solution lines, distinctive hidden lines).
_spec = importlib.util.spec_from_file_location("kit_test_generated", ROOT / "tests" / "kit" / "test_generated.py")
generated_checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generated_checks)


def release_texts(dist):
    """{where: text} of every file of dist/student/ and every member of dist/student.zip."""
    root = dist / "student"
    texts = {str(path.relative_to(dist)): path.read_text() for path in root.rglob("*") if path.is_file()}
    with zipfile.ZipFile(dist / "student.zip") as archive:
        texts.update({f"student.zip:{name}": archive.read(name).decode() for name in archive.namelist()})
    return texts


def hidden_lines():
    public = "".join(path.read_text() for folder in ("tests/public", "grader") for path in (ROOT / folder).rglob("*.py"))
    lines = {line.strip() for path in (ROOT / "tests" / "hidden").glob("*.py")
             for line in path.read_text().splitlines() if len(line.strip()) > 40}
    return {line for line in lines if line not in public and "import" not in line}


def test_release_layout_and_zip(otter_dist):
    root = otter_dist / "student"
    files = {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}
    assert {"README.md", "check.py", "requirements.txt", "exercises/attention.ipynb",
            "exercises/attention.py", "grader/check/console.py", "grader/integrations/incell.py"} <= files
    assert {f"tests/{key}.py" for key in STEP_KEYS} <= files
    assert {f"tests/public/{path.name}" for path in (ROOT / "tests" / "public").glob("*.py")} <= files
    with zipfile.ZipFile(otter_dist / "student.zip") as archive:
        assert {name.removeprefix("student/") for name in archive.namelist()} == files
        assert all(archive.read(f"student/{name}") == (root / name).read_bytes() for name in files)
    assert "otter-grader==7.0.0" in (root / "requirements.txt").read_text().splitlines()
    assert 'grader.check("<step>")' in (root / "README.md").read_text()


def test_release_has_no_solution_code_and_no_hidden_test(otter_dist, suite):
    texts = release_texts(otter_dist)
    assert not [where for where in texts if "hidden" in where or "solutions" in where or "catalogue" in where]
    secret = generated_checks.solution_lines()
    hidden = hidden_lines()
    hidden_names = {test.name for test in suite if test.kind == "hidden"}
    assert len(secret) > 30 and len(hidden) > 100 and len(hidden_names) > 20
    for where, text in texts.items():
        leaked = [line for line in secret if line in text]
        assert not leaked, f"{where} contains solution code: {leaked[:3]}"
        leaked = [line for line in hidden if line in text]
        assert not leaked, f"{where} contains hidden test code: {leaked[:2]}"
        leaked = [name for name in hidden_names if name in text]
        assert not leaked, f"{where} names hidden tests: {leaked[:2]}"


def test_notebook_checks_each_step_after_its_code(otter_dist):
    cells = json.loads((otter_dist / "student" / "exercises" / "attention.ipynb").read_text())["cells"]
    ids = [cell["id"] for cell in cells]
    assert ids[ids.index("setup-code") + 1] == "otter-setup"
    for key in STEP_KEYS:
        check = cells[ids.index(f"{key}-code") + 1]
        assert check["id"] == f"{key}-check" and "".join(check["source"]) == f'grader.check("{key}")'
    assert len(set(ids)) == len(ids)


def test_release_otter_tests_are_the_public_tests(otter_dist, suite):
    for key in STEP_KEYS:
        test_file = create_test_file(str(otter_dist / "student" / "tests" / f"{key}.py"), NBMetadataConfig())
        assert [(case.name, case.points, case.hidden) for case in test_file.test_cases] == [
            (test.name, test.points, False) for test in suite if test.step == key and test.kind == "public"]


def test_kits_loader_skips_the_otter_cells(otter_dist):
    """`make check` and `make grade` load definitions only: the guarded setup never imports Otter."""
    loaded = load_definitions(otter_dist / "student" / "exercises" / "attention.ipynb")
    assert not loaded.problems
    assert "grader" not in vars(loaded.module) and "otter" not in vars(loaded.module)
    assert callable(loaded.module.causal_mask)


def run_release_notebook(dist, tmp_path, text=None):
    """Execute the release's notebook top to bottom in a copy of the release; {step: check output}."""
    root = tmp_path / "student"
    shutil.copytree(dist / "student", root)
    path = root / "exercises" / "attention.ipynb"
    document = nbformat.reads(text or path.read_text(), as_version=4)
    NotebookClient(document, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = {}
    for cell in document.cells:
        if cell.get("id", "").endswith("-check"):
            outputs[cell["id"].removesuffix("-check")] = "\n".join(
                output.get("data", {}).get("text/plain", "") + output.get("text", "") + output.get("evalue", "")
                for output in cell.outputs)
    return outputs


def test_stub_notebook_fails_each_check_with_the_steps_message(otter_dist, tmp_path):
    outputs = run_release_notebook(otter_dist, tmp_path)
    assert set(outputs) == set(STEP_KEYS)
    for key, text in outputs.items():
        assert "All test cases passed" not in text, key
        assert "❌ Test case failed" in text and f"{key}: " in text and "not implemented yet" in text, (key, text)
        assert "✅" not in text, (key, text)


def test_solved_notebook_passes_every_check(otter_dist, clean, tmp_path):
    outputs = run_release_notebook(otter_dist, tmp_path, with_checks(notebook(code_sections(clean))))
    assert set(outputs) == set(STEP_KEYS)
    for key, text in outputs.items():
        assert f"{key} results: All test cases passed!" in text, (key, text)
