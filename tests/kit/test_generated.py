"""Generated files are fresh and leak no solution code."""

import json

from grader.build.exercises import BEGIN, END, SOLUTION, check_fresh, generated_files
from grader.paths import ROOT


def solution_lines():
    """Every substantive line inside a solution region."""
    lines, inside = set(), False
    for line in SOLUTION.read_text().splitlines():
        if line.strip().startswith(BEGIN):
            inside = True
        elif line.strip().startswith(END):
            inside = False
        elif inside and len(line.strip()) > 24:  # shorter lines are API hints (self.register_buffer()
            lines.add(line.strip())
    return lines


def test_generated_files_are_fresh():
    stale = check_fresh()
    assert not stale, f"generated files are stale, run `make student`: {stale}"


def test_student_files_contain_no_solution_code():
    secret = solution_lines()
    assert len(secret) > 30
    for relative, text in generated_files().items():
        if relative.startswith(("exercises/", "student_template/")):
            leaked = [line for line in secret if line in text]
            assert not leaked, f"{relative} contains solution code: {leaked[:3]}"


def test_student_template_ships_no_hidden_tests():
    files = generated_files()
    shipped = [relative for relative in files if relative.startswith("student_template/")]
    assert not [path for path in shipped if "hidden" in path or "catalogue" in path or "solutions" in path]
    public = "".join(path.read_text() for folder in ("tests/public", "grader") for path in (ROOT / folder).rglob("*.py"))
    hidden_lines = {line.strip() for path in (ROOT / "tests" / "hidden").glob("*.py")
                    for line in path.read_text().splitlines() if len(line.strip()) > 40}
    distinctive = {line for line in hidden_lines if line not in public and "import" not in line}
    assert len(distinctive) > 100
    for relative in shipped:
        leaked = [line for line in distinctive if line in files[relative]]
        assert not leaked, f"{relative} contains hidden test code: {leaked[:2]}"


def test_every_stub_names_its_step():
    text = generated_files()["exercises/attention.py"]
    for key in ("projection", "scaling", "masking", "dropout", "causal_attention", "mha_wrapper",
                "multihead_attention"):
        assert f'NotImplementedError("{key}: ' in text


def test_notebook_has_one_stub_cell_per_step():
    document = json.loads(generated_files()["exercises/attention.ipynb"])
    assert document["nbformat"] == 4 and document["metadata"]["kernelspec"]["name"] == "python3"
    tagged = [cell for cell in document["cells"] if cell["metadata"].get("tags")]
    assert [cell["id"] for cell in tagged] == [f"{key}-code" for key in (
        "setup", "projection", "scaling", "masking", "dropout", "causal_attention", "mha_wrapper", "multihead_attention")]
    assert all("NotImplementedError" in "".join(cell["source"]) for cell in tagged[1:])
    assert len({cell["id"] for cell in document["cells"]}) == len(document["cells"])
