"""The file `make grade ENGINE=otter` hands to `otter run`: the submission as what it is, in UTF-8.

Before: Python saved as `attention.ipynb` and a Latin-1 `.py` with its coding line failed in Otter every time
("the grader failed ... run the same command again", exit 2, again and again), where the kit's engine gave both
100 (a blind tester). Now the copy is what the kit's loader reads (`loader.submitted_form`); through `otter run`
on this machine (by hand, 25-35 s each: not in the suite), both files and a notebook saved as `.py` scored 100.
"""

import json

from grader.integrations.otter_engine import private_copy

PYTHON = "import torch\n\n\ndef causal_mask(n):\n    return torch.triu(torch.ones(n, n, dtype=torch.bool), 1)\n"


def test_python_saved_as_a_notebook_is_handed_over_as_python(tmp_path):
    submitted = tmp_path / "attention.ipynb"
    submitted.write_text(PYTHON)
    copy = private_copy(submitted, tmp_path / "copy")
    assert copy.name == "attention.py" and copy.read_text() == PYTHON


def test_a_notebook_saved_as_python_is_handed_over_as_a_notebook(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": PYTHON, "outputs": [],
                           "execution_count": None}],
                "metadata": {"kernelspec": {"name": "conda-env-course", "display_name": "course"}},
                "nbformat": 4, "nbformat_minor": 5}
    submitted = tmp_path / "attention.py"
    submitted.write_text(json.dumps(notebook))
    copy = private_copy(submitted, tmp_path / "copy")
    assert copy.name == "attention.ipynb"
    handed = json.loads(copy.read_text(encoding="utf-8"))
    assert handed["cells"][0]["source"] == PYTHON and handed["metadata"]["kernelspec"]["name"] == "python3"


def test_a_latin1_file_with_its_coding_line_is_handed_over_in_utf8(tmp_path):
    source = "# -*- coding: latin-1 -*-\n# Zoë's attention, café edition\n" + PYTHON
    submitted = tmp_path / "attention.py"
    submitted.write_bytes(source.encode("latin-1"))
    copy = private_copy(submitted, tmp_path / "copy")
    text = copy.read_bytes().decode("utf-8")  # UTF-8 now, and nothing says otherwise
    assert "Zoë's attention, café edition" in text and "latin-1" not in text
    assert text.count("\n") == source.count("\n")  # line numbers in tracebacks stay the student's
    compile(text, "attention.py", "exec")
