"""Notebooks read as Jupyter reads them: every file of tests/kit/notebooks/ (a correct solution wrapped in
magics, shell escapes, help, cell magics, questions in comments, Colab setup, old formats, a coding line)
scores exactly what the clean .py scores, in a class run (`python -m grader grade FOLDER`) and in the
student's own check (`python check.py FILE`), with IPython's transformer and with the stand-in used where
IPython is not installed; and every line the loader leaves out is named, with its place and reason."""

import contextlib
import csv
import importlib.util
import json
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest
import torch

from grader.check import loader
from grader.chapter import STEPS
from grader.paths import ROOT
from tests.kit.notebooks import make_notebooks

CORPUS_FOLDER = ROOT / "tests" / "kit" / "notebooks"
CORPUS = sorted(path for path in CORPUS_FOLDER.iterdir() if path.suffix in (".ipynb", ".py")
                and path.name not in ("__init__.py", "make_notebooks.py"))
NAMES = [name for step in STEPS for name in step.names]
HAS_IPYTHON = importlib.util.find_spec("IPython") is not None
SHELL, HELP = "a shell command (`!`) runs only in Jupyter", "a help request (`?`) shows documentation only in Jupyter"
AS_PYTHON = "was not run: it only changes how Jupyter runs the cell, so the code below it was loaded as plain Python"
# Per file, each line left out: (cell number counting markdown cells, or None in a .py; the line as the
# student wrote it; why). The test finds the line's number in the cell itself.
SKIPPED = {
    "02_line_magics.ipynb": [
        (2, "%matplotlib inline", "the magic `%matplotlib` runs only in Jupyter"),
        (2, "%load_ext autoreload", "`%load_ext`"), (2, "%autoreload 2", "`%autoreload`"),
        (13, "%timeit attention_dropout(torch.ones(64, 64), 0.1)", "the magic `%timeit` runs only in Jupyter")],
    "03_shell.ipynb": [
        (1, "!pip install torch==2.13.0 numpy", SHELL), (3, "files = !ls", SHELL + ", so `files` is not defined"),
        (11, "!nvidia-smi \\", SHELL), (14, "!!echo dropout", SHELL)],
    "04_help.ipynb": [(10, "torch.tril?", HELP), (13, "torch.*dropout*?", HELP), (13, "nn.Dropout??", HELP),
                      (16, "??nn.Linear", HELP)],
    "05_cell_time.ipynb": [(16, "%%time", AS_PYTHON), (22, "%%time", AS_PYTHON),
                           (22, "%time mha = MultiHeadAttention(4, 4, 3, 0.0, 2)", "the magic `%time`")],
    "06_cell_capture.ipynb": [(2, "%%capture", AS_PYTHON), (2, "!pip install torch numpy", SHELL)],
    "07_cell_not_python.ipynb": [
        (24, "%%writefile helpers.py", "Jupyter writes its text to a file and runs none of it"),
        (25, "%%bash", "not run its text as the notebook's Python code"),
        (26, "%%html", "not run its text as the notebook's Python code"),
        (27, "%%timeit", "keeps nothing it defines")],
    "10_colab.ipynb": [(2, "%cd /content/drive/MyDrive/attention", "the magic `%cd`"),
                       (2, "!pip install -q torch", SHELL)],
    "14_nbformat3.ipynb": [(2, "%matplotlib inline", "the magic `%matplotlib`")],
    "15_everything.ipynb": [
        (2, "%load_ext autoreload", "`%load_ext`"), (2, "%autoreload 2", "`%autoreload`"),
        (2, "%matplotlib inline", "`%matplotlib`"), (7, "%%time", AS_PYTHON), (7, "!echo scaling", SHELL),
        (7, "%timeit?", HELP), (10, "result = %timeit -o causal_mask(512)", "so `result` is not defined"),
        (13, "%time x = 1", "the magic `%time`")],
    "18_nbconvert_script.py": [(None, "get_ipython().run_line_magic('matplotlib', 'inline')", "`%matplotlib`"),
                               (None, "get_ipython().system('pip install torch')", SHELL)],
}
OUT_OF_ORDER = {"12_out_of_order.ipynb": "its cells were last run out of order (execution counts 3, 1, 7, 2, 9"}
NOT_INSTALLED = {"10_colab.ipynb": ["google", "seaborn", "matplotlib"]}  # imports that fail here, as errors
NOT_DEFINED = {"03_shell.ipynb": ["files"], "07_cell_not_python.ipynb": ["helper_from_file", "timed_helper"],
               "15_everything.ipynb": ["result"], "13_markdown_code.ipynb": ["q", "k"]}


def installed(module):
    with contextlib.suppress(ModuleNotFoundError, ValueError):
        return importlib.util.find_spec(module) is not None
    return False


def cells_of(path):
    """[(cell type, source)] of a notebook, nbformat 3 or 4, in order (a .py: one code 'cell')."""
    if path.suffix == ".py":
        return [("code", loader.read_chunks(path)[0].source)]
    document = json.loads(path.read_text(encoding="utf-8"))
    cells = document.get("cells") or [cell for sheet in document["worksheets"] for cell in sheet["cells"]]
    return [(cell["cell_type"], "".join(cell.get("source", cell.get("input", "")))) for cell in cells]


def where(path, cell, text):
    """`file, cell N, line M` of the line `text` in that cell (or `file, line M` in a .py)."""
    source = cells_of(path)[(cell or 1) - 1][1]
    line = next(number for number, written in enumerate(source.splitlines(), start=1) if written.strip() == text)
    return f"{path.name}, cell {cell}, line {line}" if cell else f"{path.name}, line {line}"


@pytest.fixture(params=["ipython", "stand-in"])
def mode(request, monkeypatch):
    """The loader with IPython's transformer, and as in a student's terminal without IPython."""
    if request.param == "ipython" and not HAS_IPYTHON:
        pytest.skip("IPython is not installed")
    if request.param == "stand-in":
        monkeypatch.setattr(loader, "_ipython_transformer", lambda: None)
    return request.param


@pytest.fixture(scope="module")
def reference(tmp_path_factory, clean):
    path = tmp_path_factory.mktemp("reference") / "attention.py"
    path.write_text(clean)
    return loader.load_definitions(path, "reference_solution").module


def outputs(module):
    """What each exercise gives on seeded inputs (all different dimensions), dropout in train and eval."""
    x = torch.rand(5, 3, generator=torch.Generator().manual_seed(0))  # 5 tokens, a context of 7
    batch = torch.stack((x, x.flip(0)))
    scores = torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(123)
    weights = module.init_qkv_weights(3, 2)
    q, k, v = module.project(x, *weights)
    got = {"init_qkv_weights": weights, "project": (q, k, v), "attention_scores": module.attention_scores(q, k),
           "scaled_attention_weights": module.scaled_attention_weights(scores, 2),
           "context_vectors": module.context_vectors(torch.softmax(scores, -1), torch.ones(2, 5, 3)),
           "dot_product_variance": module.dot_product_variance(64, num_trials=200, seed=3),
           "causal_mask": module.causal_mask(5),
           "mask_and_renormalize": module.mask_and_renormalize(torch.softmax(scores, -1)),
           "causal_attention_weights": module.causal_attention_weights(scores, 4)}
    torch.manual_seed(5)
    got["attention_dropout"] = module.attention_dropout(torch.ones(4, 4), 0.0), module.attention_dropout(
        torch.ones(4, 4), 0.5, training=False)
    for name, make in [("SelfAttention_v1", lambda c: c(3, 2)), ("SelfAttention_v2", lambda c: c(3, 2)),
                       ("CausalAttention", lambda c: c(3, 4, 7, 0.0)),
                       ("MultiHeadAttentionWrapper", lambda c: c(3, 2, 7, 0.0, num_heads=2)),
                       ("MultiHeadAttention", lambda c: c(3, 4, 7, 0.0, num_heads=2))]:
        torch.manual_seed(789)
        layer = make(getattr(module, name))
        got[name] = layer(x) if name.startswith("SelfAttention") else layer.eval()(batch)
    return got


def same(a, b):
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and torch.allclose(
            a, b, atol=1e-6, equal_nan=True)
    return a == b


# --------------------------------------------------------------------------- the corpus

def test_the_corpus_is_fresh_and_covers_what_students_submit():
    assert make_notebooks.stale() == [], "run `.venv/bin/python -m tests.kit.notebooks.make_notebooks`"
    assert len([path for path in CORPUS if path.suffix == ".ipynb"]) >= 12


# --------------------------------------------------------------------------- the loader, both ways

@pytest.mark.parametrize("path", CORPUS, ids=[path.name for path in CORPUS])
def test_every_exercise_loads_and_behaves_like_the_solution(path, mode, reference):
    loaded = loader.load_definitions(path)
    missing = [name for name in NAMES if name not in vars(loaded.module)]
    assert not missing, (missing, loaded.problems)
    expected, got = outputs(reference), outputs(loaded.module)
    assert [name for name in NAMES if not same(got[name], expected[name])] == []
    assert not [name for name in NOT_DEFINED.get(path.name, []) if name in vars(loaded.module)]


@pytest.mark.parametrize("path", CORPUS, ids=[path.name for path in CORPUS])
def test_every_line_left_out_is_named_with_its_place_and_reason(path, mode):
    loaded = loader.load_definitions(path)
    expected = SKIPPED.get(path.name, [])
    for cell, text, why in expected:
        place = where(path, cell, text)
        matches = [note for note in loaded.skipped if note.startswith((f"{place}:", f"{place} ("))
                   and f"`{text}`" in note and why in note]
        assert len(matches) == 1, (place, text, why, loaded.skipped)
    if path.name in OUT_OF_ORDER:
        assert OUT_OF_ORDER[path.name] in loaded.skipped[0] and "Restart & Run All" in loaded.skipped[0]
    assert len(loaded.skipped) == len(expected) + (path.name in OUT_OF_ORDER), loaded.skipped  # nothing silent
    errors = [problem for problem in loaded.problems if problem not in loaded.skipped]
    failing = [module for module in NOT_INSTALLED.get(path.name, []) if not installed(module)]
    assert len(errors) == len(failing) and all(f"No module named '{module}'" in " ".join(errors) for module in failing)
    assert loaded.problems == errors + loaded.skipped  # what costs points first
    assert [loader.left_out_note(problem) for problem in loaded.problems] == [
        problem in loaded.skipped for problem in loaded.problems]


def test_strings_and_comments_are_never_touched(mode):
    loaded = loader.load_definitions(CORPUS_FOLDER / "09_strings_and_brackets.ipynb")
    assert loaded.module.NOTES == ("Notes to self:\n%matplotlib inline is not needed here\n"
                                   "!pip install torch if the import fails\n?? ask about masking\n")
    assert "\n    !important: rows of the result sum to one.\n    %s of the weights" in (
        loaded.module.mask_and_renormalize.__doc__)
    chunks = loader.read_chunks(CORPUS_FOLDER / "08_question_comments.ipynb")
    assert any("return torch.triu(ones, diagonal=1)  # is diagonal=1 right?\n" in c.source for c in chunks)


CELLS = ["\n\n%matplotlib inline\nimport torch", "!pip install torch", "files = !ls", "torch.tril?", "??nn.Linear",
         "torch.*tri*?", "%%time\nclass A:\n    pass\n", "  x=1\n  y=2", "def f():\n    %time x=1\n    return m  # right?\n",
         's = """\n%not magic\n!nor this\n"""\nz = (1,\n!2)', "%time x = f(1, \\\n  2)\ny=3", "x = %timeit -o f()",
         "%%timeit?", "%%capture out\nimport seaborn\n", "x = 5 % 3\ny = '%d' % 3\nmsg = ('a'\n   % x)", "!!ls",
         "out = !!ls", "if x:\n    !echo hi\nelse:\n    %ls", "x.y[0]?", "# what?\nx = 1 # ok?", "!ls \\\n  -la\ny = 2",
         "%%writefile x.py\nprint(1)", "a = (1 !=\n     2)\nb = {'k':\n     !0}", "%pip install torch\r\nx = 1\r\n"]


@pytest.mark.skipif(not HAS_IPYTHON, reason="IPython is not installed")
@pytest.mark.parametrize("cell", CELLS)
def test_the_stand_in_reads_cells_as_ipython_does(cell, monkeypatch):
    with_ipython = loader._cell_python(cell, "nb, cell 1", [], [loader.TRANSFORM_BUDGET])
    monkeypatch.setattr(loader, "_ipython_transformer", lambda: None)
    assert loader._cell_python(cell, "nb, cell 1", [], [loader.TRANSFORM_BUDGET]) == with_ipython
    # line for line the student's (so every line number holds); a %%writefile cell is no Python at all
    assert with_ipython.count("\n") >= cell.count("\n") or (with_ipython == "" and "%%writefile" in cell)


def notebook_file(folder, *cells, name="attention.ipynb", **document):
    path = folder / name
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [],
                                           "execution_count": None} for c in cells],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **document}))
    return path


def test_line_numbers_and_tracebacks_stay_the_students(tmp_path, mode):
    path = notebook_file(tmp_path, "\n\n!ls \\\n  -la\nimport not_a_module_here\n\ndef f():\n    return 1 / 0\n")
    loaded = loader.load_definitions(path)
    assert loaded.problems[0].startswith("attention.ipynb, cell 1, line 5: loading this statement raised "
                                         "ModuleNotFoundError"), loaded.problems
    assert loaded.problems[1].startswith("attention.ipynb, cell 1, line 3: `!ls \\` was not loaded")
    with pytest.raises(ZeroDivisionError) as error:
        loaded.module.f()
    frame = traceback.extract_tb(error.value.__traceback__)[-1]
    assert (frame.filename, frame.lineno, frame.line) == ("attention.ipynb, cell 1", 8, "return 1 / 0")


def test_a_shell_line_inside_a_method_is_left_out_and_said(tmp_path, mode):
    path = notebook_file(tmp_path, "class A:\n    def f(self):\n        !ls\n        return 2\n")
    loaded = loader.load_definitions(path)
    assert loaded.module.A().f() == 2
    assert loaded.problems == ["attention.ipynb, cell 1, line 3 (in A.f): `!ls` was not loaded: " + SHELL + "."]


def test_a_line_ipython_refuses_costs_only_its_block(tmp_path, mode):
    path = notebook_file(tmp_path, "import math\nx = f(1)?\n", "def g():\n    return 3\n")
    loaded = loader.load_definitions(path)
    assert loaded.module.g() == 3 and "math" in vars(loaded.module)
    assert loaded.problems[0].startswith("attention.ipynb, cell 1, line 2: SyntaxError")
    assert not loader.left_out_note(loaded.problems[0])


def test_a_cp1252_file_is_read_as_its_coding_line_says():
    [chunk] = loader.read_chunks(CORPUS_FOLDER / "17_cp1252.py")
    assert "# Attention exercises \u2014 caf\u00e9 notes: na\u00efve r\u00e9sum\u00e9" in chunk.source


@pytest.mark.parametrize("content, words", [
    ("# caf\u00e9\nx = 1\n".encode("latin-1"), "bad.py is not UTF-8 text (byte 5 cannot be decoded)"),
    (b"# -*- coding: klingon -*-\nx = 1\n", "bad.py cannot be read as Python source: its coding line is wrong"),
    (b"# coding: cp1252\nx = '\x81'\n", "bad.py is not cp1252 text as its coding line says (byte 22"),
    (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", "bad.py cannot be read as Python source"),
])
def test_a_file_python_cannot_decode_is_named_with_the_reason(tmp_path, content, words):
    path = tmp_path / "bad.py"
    path.write_bytes(content)
    with pytest.raises(loader.SubmissionError) as error:
        loader.read_chunks(path)
    assert words in str(error.value)


def test_a_bom_is_dropped(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbfimport math\nx = 'caf\xc3\xa9'\n")
    assert loader.load_definitions(path).module.x == "caf\u00e9"


OLD_FORMATS = {  # the same two code cells and a text cell, as IPython 0.12 (v1) and IPython 1-2 (v2, v3) saved them
    1: {"nbformat": 1, "cells": [{"cell_type": "text", "text": "Attention"},
                                 {"cell_type": "code", "code": "%matplotlib inline\nimport math\n", "prompt_number": 2},
                                 {"cell_type": "code", "code": "def f():\n    return math.pi\n", "prompt_number": 1}]},
    2: {"nbformat": 2, "metadata": {"name": "a"}, "worksheets": [{"cells": [
        {"cell_type": "markdown", "source": "Attention"},
        {"cell_type": "code", "input": "%matplotlib inline\nimport math\n", "prompt_number": 2, "language": "python",
         "outputs": [], "collapsed": False},
        {"cell_type": "code", "input": "def f():\n    return math.pi\n", "prompt_number": 1, "language": "python",
         "outputs": [], "collapsed": False}]}]},
    3: {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": "a"}, "worksheets": [{"metadata": {}, "cells": [
        {"cell_type": "heading", "level": 1, "metadata": {}, "source": ["Attention"]},
        {"cell_type": "code", "input": ["%matplotlib inline\n", "import math\n"], "prompt_number": 2,
         "language": "python", "outputs": [], "collapsed": False, "metadata": {}},
        {"cell_type": "code", "input": ["def f():\n", "    return math.pi\n"], "prompt_number": 1,
         "language": "python", "outputs": [], "collapsed": False, "metadata": {}}]}]},
}


@pytest.mark.parametrize("version", sorted(OLD_FORMATS))
def test_old_notebook_formats_are_upgraded_as_nbformat_does(tmp_path, version, mode):
    nbformat = pytest.importorskip("nbformat")  # the library is the reference here, not a dependency of grading
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps(OLD_FORMATS[version]))
    upgraded = nbformat.reads(path.read_text(), as_version=4)
    expected = [(f"old.ipynb, cell {index}", cell.source) for index, cell in enumerate(upgraded.cells, start=1)
                if cell.cell_type == "code"]
    chunks = loader.read_chunks(path)
    assert [(chunk.filename, chunk.original) for chunk in chunks] == expected
    loaded = loader.load_definitions(path)
    assert abs(loaded.module.f() - 3.14159) < 1e-5
    assert [note.partition(":")[0] for note in loaded.skipped] == ["old.ipynb", "old.ipynb, cell 2, line 1"]


@pytest.mark.parametrize("text, words", [
    ("{not json", "not a valid notebook"),
    ("[" * 100_000 + "]" * 100_000, "not a valid notebook"),
    (json.dumps({"cells": [], "metadata": {"kernelspec": {"language": "R"}}}), "Switch the kernel to Python 3"),
    (json.dumps({"nbformat": 3, "worksheets": "junk"}), "not a Jupyter notebook"),
    (json.dumps({"cells": [{"cell_type": "code", "source": "x = 1\n"}] * (loader.MAX_CODE_CELLS + 1)}),
     "code cells"),
    (json.dumps({"cells": [{"cell_type": "code", "source": "#" * 600_000}] * 2}), "MB of code"),
])
def test_broken_notebooks_are_refused_with_the_reason(tmp_path, text, words):
    path = tmp_path / "bad.ipynb"
    path.write_text(text)
    with pytest.raises(loader.SubmissionError, match=words):
        loader.read_chunks(path)


def test_a_notebook_saved_with_its_plots_is_read_for_its_code(tmp_path, clean, reference):
    """Outputs are not code: a notebook with a few plots (megabytes of base64 PNG) loads like its code."""
    document = json.loads((CORPUS_FOLDER / "01_clean.ipynb").read_text())
    picture = {"output_type": "display_data", "metadata": {},
               "data": {"image/png": "iVBORw0KGgo" + "A" * 600_000, "text/plain": ["<Figure size 640x480>"]}}
    for cell in document["cells"][3::2]:
        cell["outputs"] = [picture]
    path = tmp_path / "attention.ipynb"
    path.write_text(json.dumps(document))
    assert path.stat().st_size > 3 * loader.MAX_SOURCE_BYTES
    loaded = loader.load_definitions(path)
    assert not loaded.problems and same(outputs(loaded.module)["MultiHeadAttention"],
                                        outputs(reference)["MultiHeadAttention"])
    path.write_text(json.dumps(document) + " " * loader.MAX_NOTEBOOK_BYTES)
    with pytest.raises(loader.SubmissionError, match="Clear All Outputs"):
        loader.read_chunks(path)


def test_odd_metadata_is_read_as_python(tmp_path):
    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "x = 1"}], "metadata": {"kernelspec": "python3"}}))
    assert loader.load_definitions(path).module.x == 1


def test_a_hostile_cell_costs_seconds_not_hours(tmp_path):
    """IPython re-reads a whole cell per magic it rewrites: past TRANSFORM_BUDGET the linear stand-in reads it."""
    path = notebook_file(tmp_path, "%ls\n" * 30_000 + "x = 1\n", "y = 2\n" + "!ls\n" * 5_000)
    started = time.monotonic()
    loaded = loader.load_definitions(path)
    assert time.monotonic() - started < 20  # IPython alone: about 30_000 passes over 120 kB
    assert loaded.module.x == 1 and loaded.module.y == 2 and len(loaded.skipped) == 35_000
    assert len(loaded.problems) == loader.MAX_PROBLEMS + 1 and loaded.problems[-1].startswith("... and 34980 more")


# --------------------------------------------------------------------------- grading: a class run

@pytest.fixture(scope="module")
def class_run(tmp_path_factory, clean):
    """`python -m grader grade` on one folder holding the corpus and the clean solution as a .py."""
    root = tmp_path_factory.mktemp("corpus_class")
    folder = root / "class"
    folder.mkdir()
    (folder / "00_reference.py").write_text(clean)
    for path in CORPUS:
        (folder / path.name).write_bytes(path.read_bytes())
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(root / "out"),
                           "--jobs", "2"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "out"


def results_of(out, name):
    return json.loads((out / "results" / f"{name}.json").read_text())


def test_every_corpus_file_scores_what_the_same_code_scores_as_a_py(class_run, maxima):
    reference = results_of(class_run, "00_reference")
    expected = {test["name"]: test["score"] for test in reference["tests"]}
    assert reference["score"] == sum(maxima.values())
    differ = {}
    for path in CORPUS:
        got = {test["name"]: test["score"] for test in results_of(class_run, path.stem)["tests"]}
        if got != expected:
            differ[path.name] = sorted(name for name in expected if got.get(name) != expected[name])
    assert not differ, differ
    rows = {row["submission"]: row["total"] for row in csv.DictReader((class_run / "grades.csv").open())}
    assert {rows[path.stem] for path in CORPUS} == {rows["00_reference"]}


def test_the_feedback_names_the_lines_left_out_and_the_report_does_not_count_them(class_run):
    data = results_of(class_run, "15_everything")
    assert len(data["extra_data"]["problems"]) == len(SKIPPED["15_everything.ipynb"])
    page = (class_run / "feedback" / "15_everything.html").read_text()
    assert "did not run (they cost no points)" in page and "`%timeit?`" in page
    assert "Problems found while loading" not in page
    report = (class_run / "report.html").read_text()
    unloaded = [name for name in ("10_colab",) if not all(installed(m) for m in NOT_INSTALLED["10_colab.ipynb"])]
    if unloaded:  # its imports of uninstalled libraries are errors; magics alone are not
        assert "1 file(s) had parts that did not load" in report
    section = report.partition("Files that did not load cleanly")[2]
    assert "15_everything" not in section and "02_line_magics" not in section


# --------------------------------------------------------------------------- the student's own check

TEMPLATE = ROOT / "student_template"
DRIVER = """
import contextlib, io, json, runpy, sys
results = {}
for path in sys.argv[1:]:
    sys.argv = ["check.py", path]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            runpy.run_path("check.py", run_name="__main__")
            code = 0
        except SystemExit as stop:
            code = stop.code
    results[path] = [code, printed.getvalue()]
print(json.dumps(results))
"""


def checked(files, env=None):
    """{file: (exit status, the step lines)} of `python check.py FILE` for each file, run in one interpreter
    in student_template/ (torch imported once)."""
    done = subprocess.run([sys.executable, "-c", DRIVER, *map(str, files)], cwd=TEMPLATE, capture_output=True,
                          text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    step_line = re.compile(r"\S+ \d+\. \w+ |    ")  # a step's mark, number and key, or its reason below
    return {Path(path).name: (code, [line for line in text.splitlines() if step_line.match(line)])
            for path, (code, text) in json.loads(done.stdout).items()}


def without_ipython(tmp_path):
    """An environment in which `import IPython` fails, as in a student's terminal without Jupyter."""
    blocker = tmp_path / "blocker" / "IPython"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('IPython is not installed here')\n")
    return {**__import__("os").environ, "PYTHONPATH": str(tmp_path / "blocker")}


@pytest.mark.parametrize("ipython", [True, False], ids=["with IPython", "without IPython"])
@pytest.mark.slow(reason='`python check.py` over the whole corpus, in a process')
def test_the_students_check_gives_every_corpus_file_what_it_gives_the_py(tmp_path, clean, ipython):
    reference = tmp_path / "attention.py"
    reference.write_text(clean)
    results = checked([reference, *CORPUS], env=None if ipython else without_ipython(tmp_path))
    code, lines = results.pop("attention.py")
    assert code == 0 and len(lines) == len(STEPS) and all("checks passed" in line for line in lines), lines
    assert {name: result for name, result in results.items() if result != (0, lines)} == {}


@pytest.mark.slow(reason='`python check.py` as a process (a torch import)')
def test_check_py_with_a_step_and_a_notebook_as_a_student_types_it():
    done = subprocess.run([sys.executable, "check.py", "masking", str(CORPUS_FOLDER / "15_everything.ipynb")],
                          cwd=TEMPLATE, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3. masking" in done.stdout and "checks passed" in done.stdout
    assert "note: 15_everything.ipynb" in done.stdout and "line 1: `%%time` was not run" in done.stdout
