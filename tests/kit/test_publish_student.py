"""The student download (dist/student.zip) and the answer key (dist/solutions/): one release, nothing secret.

The release is student_template/ as `make student` writes it; its notebook carries the checker's
cells (a setup cell, a `check("<step>")` cell after each step), which need neither Otter nor
nbgrader and which the grader's loader skips. Running it (with Otter installed and without) and
checking it in a terminal: tests/kit/test_release.py. Otter's autograder grading this notebook:
tests/kit/test_otter.py.
"""

import importlib.util
import json
import zipfile

import pytest

from grader.build.exercises import generated_files
from grader.build.release import TOP_FOLDER
from grader.chapter import STEP_KEYS
from grader.check.loader import load_definitions
from grader.paths import ROOT

pytestmark = pytest.mark.kit

# The leak checks of the committed student_template/ (solution lines, distinctive hidden lines).
_spec = importlib.util.spec_from_file_location("kit_test_generated", ROOT / "tests" / "kit" / "test_generated.py")
generated_checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generated_checks)


def release_texts(dist):
    """{where: text} of every member of dist/student.zip."""
    with zipfile.ZipFile(dist / "student.zip") as archive:
        return {f"student.zip:{name}": archive.read(name).decode() for name in archive.namelist()}


def hidden_lines():
    public = "".join(path.read_text() for folder in ("tests/public", "grader") for path in (ROOT / folder).rglob("*.py"))
    lines = {line.strip() for path in (ROOT / "tests" / "hidden").glob("*.py")
             for line in path.read_text().splitlines() if len(line.strip()) > 40}
    return {line for line in lines if line not in public and "import" not in line}


def test_the_zip_is_student_template_and_the_only_student_download(otter_dist):
    template = {name.removeprefix("student_template/"): text for name, text in generated_files().items()
                if name.startswith("student_template/")}
    with zipfile.ZipFile(otter_dist / "student.zip") as archive:
        members = {name.removeprefix(f"{TOP_FOLDER}/"): archive.read(name).decode() for name in archive.namelist()}
        assert all(name.startswith(f"{TOP_FOLDER}/") for name in archive.namelist())
    assert members == template
    assert {"README.md", "check.py", "requirements.txt", "exercises/attention.ipynb", "exercises/attention.py",
            "grader/check/console.py", "grader/check/notebook.py"} <= set(members)
    assert {f"tests/public/{path.name}" for path in (ROOT / "tests" / "public").glob("*.py")} <= set(members)
    assert not (otter_dist / "student").exists()  # no second, different release beside the zip
    assert 'check("<step>")' in members["README.md"]


def test_the_answer_key_lies_where_the_release_has_the_exercises(otter_dist):
    key = {str(path.relative_to(otter_dist / "solutions")) for path in (otter_dist / "solutions").rglob("*")
           if path.is_file()}
    assert key == {"exercises/attention.py", "exercises/attention.ipynb"}
    release = json.loads((otter_dist / "solutions" / "exercises" / "attention.ipynb").read_text())
    stub = json.loads(generated_files()["student_template/exercises/attention.ipynb"])
    assert [cell["id"] for cell in release["cells"]] == [cell["id"] for cell in stub["cells"]]


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


def release_notebook(dist):
    with zipfile.ZipFile(dist / "student.zip") as archive:
        return json.loads(archive.read(f"{TOP_FOLDER}/exercises/attention.ipynb"))


def test_notebook_sets_up_the_checker_first_and_checks_each_step_after_its_code(otter_dist):
    cells = release_notebook(otter_dist)["cells"]
    ids = [cell["id"] for cell in cells]
    code = [cell["id"] for cell in cells if cell["cell_type"] == "code"]
    assert code[0] == "checker-setup" and ids[ids.index("checker-setup") + 1] == "setup-code"
    for key in STEP_KEYS:
        check = cells[ids.index(f"{key}-code") + 1]
        assert check["id"] == f"{key}-check" and "".join(check["source"]) == f'check("{key}")'
    assert ids[-1] == "how-to-submit" and len(set(ids)) == len(ids)


def test_release_checks_are_the_kits_public_tests(otter_dist, suite):
    """What check() and check.py run in the release is the kit's public tests, file for file."""
    texts = release_texts(otter_dist)
    for path in (ROOT / "tests" / "public").glob("*.py"):
        assert texts[f"student.zip:{TOP_FOLDER}/tests/public/{path.name}"] == path.read_text()
    public_steps = {test.step for test in suite if test.kind == "public"}
    assert public_steps == set(STEP_KEYS)


def test_kits_loader_skips_the_checker_cells(otter_dist, tmp_path):
    """Grading loads definitions only: the guarded setup cell and the bare check() calls never run."""
    path = tmp_path / "attention.ipynb"
    path.write_text(json.dumps(release_notebook(otter_dist)))
    loaded = load_definitions(path)
    assert not [problem for problem in loaded.problems if problem not in getattr(loaded, "skipped", [])]
    assert not {"grader", "otter", "check", "ready", "_release"} & set(vars(loaded.module))
    assert callable(loaded.module.causal_mask)
