"""dist/student/ and dist/student.zip: the student release, with Otter self-checks in the notebook.

It is `student_template/` as `make student` generates it (stubs, public tests,
the grader package for `make check`, README, Makefile), plus Otter:

* exercises/attention.ipynb: the chapter notebook with a setup cell
  (`grader = otter.Notebook(tests_dir="../tests")`) and a `grader.check("<step>")`
  cell after each step's code cell;
* tests/<step>.py: Otter test files over the kit's PUBLIC tests only (the same
  generator as the autograder's, grader/publish/otter.py), beside tests/public/;
* requirements.txt with otter-grader pinned, and a README section on the checks.

The setup cell is guarded by `if __name__ == "__main__":`, so it runs in Jupyter
and in Otter's kernel but the kit's loader (`make check`, `make grade`) skips
it like any script code: grading a released notebook never imports Otter.
"""

import json
import shutil
import zipfile
from pathlib import Path

from grader.build.exercises import generated_files
from grader.chapter import STEP_KEYS
from grader.paths import ROOT
from grader.integrations.otter import test_files
from grader.integrations.shipping import shipped_files

TEMPLATE = "student_template/"

SETUP_CELL = '''# Self-checks with Otter: after each step, run its `grader.check("<step>")` cell.
# This cell runs in Jupyter; `make check` and the grader load your definitions only and skip it.
if __name__ == "__main__":
    import otter

    grader = otter.Notebook(tests_dir="../tests")'''

README_SECTION = '''
## Self-checks in the notebook (Otter)

`requirements.txt` also installs [Otter](https://otter-grader.readthedocs.io)
for checks inside the notebook: run the notebook's setup cell once, then the
`grader.check("<step>")` cell after each step. It runs that step's public
checks on your definitions as they are in the notebook at that moment and
shows what failed and why. The checks are in `tests/<step>.py`; they run the
same public tests as `make check`, so the same caveat holds: the autograder
also runs hidden tests.
'''


def _cell(source, cell_id):
    return {"cell_type": "code", "id": cell_id, "metadata": {}, "execution_count": None, "outputs": [],
            "source": source.splitlines(keepends=True)}


def with_checks(notebook_text):
    """The notebook with the Otter setup cell and one `grader.check` cell after each step's code."""
    document = json.loads(notebook_text)
    cells = []
    for cell in document["cells"]:
        cells.append(cell)
        key = cell["id"].removesuffix("-code") if cell["id"].endswith("-code") else None
        if key == "setup":
            cells.append(_cell(SETUP_CELL, "otter-setup"))
        elif key in STEP_KEYS:
            cells.append(_cell(f'grader.check("{key}")', f"{key}-check"))
    document["cells"] = cells
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def otter_pin():
    """The otter-grader pin of requirements-publish.txt: students check with the autograder's version."""
    for line in (ROOT / "requirements-publish.txt").read_text().splitlines():
        if line.strip().lower().startswith("otter-grader=="):
            return line.strip()
    raise ValueError("requirements-publish.txt pins no otter-grader")


def release_files():
    """{relative path: text} of the student release."""
    files = {relative[len(TEMPLATE):]: text for relative, text in generated_files().items()
             if relative.startswith(TEMPLATE)}
    files["exercises/attention.ipynb"] = with_checks(files["exercises/attention.ipynb"])
    files["requirements.txt"] += f"# Otter, for the notebook's grader.check cells\n{otter_pin()}\n"
    files["README.md"] += README_SECTION
    for name, text in test_files(kinds=("public",)).items():
        files[f"tests/{name}"] = text
    # The Otter test files run the kit's tests through grader.integrations.incell (the checks only).
    files.update((name, text) for name, text in shipped_files(["grader.integrations.incell"]).items()
                 if name not in files)
    return files


def build(dist):
    """Write dist/student/ and dist/student.zip; return the paths written."""
    root = Path(dist) / "student"
    files = release_files()
    shutil.rmtree(root, ignore_errors=True)  # a file the release no longer has must not linger
    written = []
    for relative, text in sorted(files.items()):
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written.append(target)
    archive_path = Path(dist) / "student.zip"
    with zipfile.ZipFile(archive_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for relative, text in sorted(files.items()):
            archive.writestr(f"student/{relative}", text)
    return [*written, archive_path]
