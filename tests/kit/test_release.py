"""The student release as a student gets it: dist/student.zip unzipped into a folder outside the
repository, checked with `python check.py` and its notebook run top to bottom (in the release, and
moved to another working folder with student.zip beside it, as in Colab); the answer key
dist/solutions/ copied over it; the Pythons it must import on; and what it must never hold.
"""

import contextlib
import io
import json
import linecache
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from grader.build.exercises import clean_solution, code_sections, notebook, with_checks
from grader.build.release import build
from grader.chapter import BY_KEY, STEP_KEYS
from grader.check import notebook as checker
from grader.check.loader import load_definitions
from grader.faults.bugs import BUGS
from grader.paths import ROOT

pytestmark = [pytest.mark.kit,
              pytest.mark.slow(reason='builds the student release and runs check.py and its notebook in fresh Pythons')]

PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
ATTENTION_STEPS = ("masking", "causal_attention", "mha_wrapper", "multihead_attention")


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """make publish's student part: dist/student.zip and dist/solutions/."""
    folder = tmp_path_factory.mktemp("dist")
    build(folder)
    return folder


def unzip(dist, into):
    """The release as a student unzips it, in `into` (outside the repository); its folder."""
    assert ROOT not in Path(into).resolve().parents
    with zipfile.ZipFile(dist / "student.zip") as archive:
        archive.extractall(into)
    return Path(into) / "student"


def solve(dist, release):
    """Copy dist/solutions/ over an unzipped release, as staff do to test it end to end."""
    shutil.copytree(dist / "solutions", release, dirs_exist_ok=True)
    return release


@pytest.fixture(scope="module")
def untouched(dist, tmp_path_factory):
    return unzip(dist, tmp_path_factory.mktemp("untouched"))


@pytest.fixture(scope="module")
def solved(dist, tmp_path_factory):
    return solve(dist, unzip(dist, tmp_path_factory.mktemp("solved")))


def check_py(release, *args, python=sys.executable, cwd=None):
    """`python check.py ARGS` in the release folder, with nothing of the kit on the path."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([str(python), str(release / "check.py"), *args], cwd=cwd or release, env=env,
                          capture_output=True, text=True, timeout=300)


def step_lines(output):
    """{step key: its line} of check.py's or check()'s output."""
    lines = {}
    for line in output.splitlines():
        match = re.match(r"([✓✗]) \d\. (\w+) +(.*)", line)
        if match:
            lines[match[2]] = (match[1], match[3])
    return lines


# -- python check.py ---------------------------------------------------------------------------------------------

def test_untouched_release_fails_every_step_as_not_implemented(untouched):
    done = check_py(untouched)
    assert done.returncode == 1, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("Checking exercises/attention.ipynb: neither it nor attention.py is edited yet"), first
    assert "public checks only" in done.stdout.lower() and "hidden" in done.stdout
    lines = step_lines(done.stdout)
    assert list(lines) == list(STEP_KEYS)
    assert all(lines[key] == ("✗", "not implemented yet") for key in STEP_KEYS), lines
    one = check_py(untouched, "masking")
    assert one.returncode == 1 and step_lines(one.stdout) == {"masking": ("✗", "not implemented yet")}, one.stdout


def test_solved_release_passes_every_step_and_each_step_alone(solved, tmp_path):
    done = check_py(solved)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(mark == "✓" for mark, _ in step_lines(done.stdout).values()) and len(step_lines(done.stdout)) == 7
    assert "How to submit:" in done.stdout
    for key in STEP_KEYS:
        one = check_py(solved, key)
        assert one.returncode == 0, (key, one.stdout, one.stderr)
        assert list(step_lines(one.stdout)) == [key] and step_lines(one.stdout)[key][0] == "✓", one.stdout
    for name in ("exercises/attention.ipynb", "exercises/attention.py"):
        named = check_py(solved, str(solved / name), cwd=tmp_path)  # from another folder, the file named
        assert named.returncode == 0 and "the file you named" in named.stdout.splitlines()[0], (name, named.stdout)


def test_unknown_step_exits_2_with_the_steps(untouched):
    done = check_py(untouched, "maskng")
    assert done.returncode == 2
    assert "unknown step 'maskng'" in done.stderr and ", ".join(STEP_KEYS) in done.stderr, done.stderr
    missing = check_py(untouched, "masking", "no_such_file.py")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_default_file_is_the_one_the_student_edited(dist, tmp_path):
    release = unzip(dist, tmp_path)
    shutil.copyfile(dist / "solutions" / "exercises" / "attention.py", release / "exercises" / "attention.py")
    done = check_py(release, "masking")
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith("Checking exercises/attention.py: you edited it; attention.ipynb is as released")
    # Running and saving the untouched notebook changes its outputs, not its code: still "as released".
    document = json.loads((release / "exercises" / "attention.ipynb").read_text())
    document["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran\n"]}]
    (release / "exercises" / "attention.ipynb").write_text(json.dumps(document))
    assert check_py(release, "masking").stdout.startswith("Checking exercises/attention.py: you edited it")
    # Both edited: the one saved last, and how to check the other.
    shutil.copyfile(dist / "solutions" / "exercises" / "attention.ipynb", release / "exercises" / "attention.ipynb")
    both = check_py(release, "masking")
    assert both.stdout.startswith("Checking exercises/attention.ipynb: you edited both; it was saved after "
                                  "attention.py (python check.py STEP exercises/attention.py checks that one)")


def buggy_release(dist, folder, bug_id):
    release = unzip(dist, folder)
    source = next(bug for bug in BUGS if bug.id == bug_id).apply(clean_solution())
    (release / "exercises" / "attention.py").write_text(source)
    (release / "exercises" / "attention.ipynb").write_text(with_checks(notebook(code_sections(source))))
    return release


def test_a_failure_names_the_class_and_the_line_of_its_cell_not_a_cell_number(dist, tmp_path):
    release = buggy_release(dist, tmp_path, "causal_mask_not_sliced")
    for name, place in (("exercises/attention.ipynb", "of its cell"), ("exercises/attention.py", "of attention.py")):
        done = check_py(release, "causal_attention", name)
        assert done.returncode == 1
        line = step_lines(done.stdout)["causal_attention"]
        assert line[0] == "✗" and "CausalAttention.forward raised RuntimeError" in line[1], done.stdout
        assert re.search(rf"\n    at CausalAttention\.forward, line \d+ {place}: attn_scores\.masked_fill_", done.stdout)
        assert not re.search(r"cell \d", done.stdout), done.stdout


# -- the notebook ------------------------------------------------------------------------------------------------

def execute(path, cwd, first_cell=None):
    """Run a notebook top to bottom with nbclient in `cwd`, as Jupyter does; {cell id: its text output},
    and the HTML it displayed, per cell."""
    document = nbformat.read(path, as_version=4)
    if first_cell:
        document.cells.insert(0, nbformat.v4.new_code_cell(first_cell, id="test-first"))
    NotebookClient(document, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    texts, markup = {}, {}
    for cell in document.cells:
        if cell.cell_type != "code":
            continue
        texts[cell.id] = "".join(output.get("text", "") + output.get("evalue", "") for output in cell.outputs)
        markup[cell.id] = "".join(output.get("data", {}).get("text/html", "") for output in cell.outputs)
    return texts, markup


def assert_every_check_passes(texts, markup):
    assert texts["checker-setup"].startswith("Checker ready"), texts["checker-setup"]
    for key in STEP_KEYS:
        lines = step_lines(texts[f"{key}-check"])
        assert list(lines) == [key] and lines[key][0] == "✓", (key, texts[f"{key}-check"])
    for key in ATTENTION_STEPS:  # the weights drawn beside the causal pattern, the future hidden
        assert markup[f"{key}-check"].count("<svg") == 2, key
        assert "the future is hidden and every row sums to one" in markup[f"{key}-check"], key
    errors = {cell: text for cell, text in texts.items() if "Error" in text or "Traceback" in text}
    assert not errors, errors


def test_solved_notebook_runs_top_to_bottom_in_the_release_with_otter_and_nbgrader_installed(solved):
    exercises = solved / "exercises"
    texts, markup = execute(exercises / "attention.ipynb", exercises, first_cell="import otter, nbgrader")
    assert not texts["test-first"], texts["test-first"]  # both installed in this kernel: no clash with check()
    assert_every_check_passes(texts, markup)


def test_solved_notebook_runs_from_another_folder_with_the_zip_beside_it_as_in_colab(dist, tmp_path):
    """Colab runs an uploaded notebook in /content, with whatever was uploaded beside it: student.zip."""
    content = tmp_path / "content"
    content.mkdir()
    shutil.copyfile(dist / "solutions" / "exercises" / "attention.ipynb", content / "attention.ipynb")
    shutil.copyfile(dist / "student.zip", content / "student.zip")
    assert_every_check_passes(*execute(content / "attention.ipynb", content))
    assert (content / "student" / "check.py").is_file()  # the setup cell unzipped it


def test_untouched_notebook_runs_without_otter_or_nbgrader(untouched, tmp_path):
    release = shutil.copytree(untouched, tmp_path / "student")
    path = release / "exercises" / "attention.ipynb"
    assert "otter" not in path.read_text().lower() and "nbgrader" not in path.read_text().lower()
    texts, _ = execute(path, path.parent, first_cell="import sys\nsys.modules.update(otter=None, nbgrader=None)")
    assert texts["checker-setup"].startswith("Checker ready"), texts["checker-setup"]
    for key in STEP_KEYS:
        assert step_lines(texts[f"{key}-check"]) == {key: ("✗", "not implemented yet")}, texts[f"{key}-check"]


def test_the_grader_loads_the_definitions_only_skipping_the_checker_cells(solved):
    loaded = load_definitions(solved / "exercises" / "attention.ipynb")
    assert not [problem for problem in loaded.problems if problem not in getattr(loaded, "skipped", [])]
    assert not {"check", "ready", "sys", "_release", "zipfile"} & set(vars(loaded.module))
    assert callable(loaded.module.CausalAttention)


def in_notebook(source, step, monkeypatch):
    """check(step) on the definitions of `source` as a notebook's globals (compiled as IPython compiles
    a cell): (what it printed, the HTML it showed)."""
    namespace, cell = {"__name__": "__main__"}, "<ipython-input-1-test>"
    linecache.cache[cell] = (len(source), None, source.splitlines(True), cell)  # as IPython keeps its cells
    exec(compile(source, cell, "exec"), namespace)
    shown, printed = [], io.StringIO()
    monkeypatch.setattr(checker, "show_html", shown.append)
    with contextlib.redirect_stdout(printed):
        checker.check(step, namespace=namespace)
    return printed.getvalue(), "".join(shown)


def test_check_draws_a_buggy_mask_beside_the_causal_pattern(monkeypatch):
    clean = clean_solution()
    text, markup = in_notebook(next(bug for bug in BUGS if bug.id == "causal_fill_zero").apply(clean),
                               "causal_attention", monkeypatch)
    assert step_lines(text)["causal_attention"][0] == "✗"
    assert "your attention weights" in markup and "expected pattern (causal)" in markup
    assert "15 weight(s) on future tokens" in markup and markup.count("gives weight to the future key") == 15
    text, markup = in_notebook(clean, "masking", monkeypatch)
    assert step_lines(text)["masking"][0] == "✓" and "the future is hidden" in markup
    text, markup = in_notebook(clean, "maskng", monkeypatch)
    assert text.startswith("unknown step 'maskng'; the steps are: projection, scaling, masking") and not markup


def test_check_in_a_cell_names_the_line_of_the_cell(monkeypatch):
    source = next(bug for bug in BUGS if bug.id == "causal_mask_not_sliced").apply(clean_solution())
    text, _ = in_notebook(source, "causal_attention", monkeypatch)
    assert re.search(r"\n    at CausalAttention\.forward, line \d+ of its cell: attn_scores\.masked_fill_", text), text


# -- what the release holds --------------------------------------------------------------------------------------

ENGINE = ("grader/sandbox/", "grader/cohort/", "grader/integrations/", "grader/feedback/", "grader/judging/",
          "grader/build/", "grader/faults/", "grader/cli.py", "grader/__main__.py")
# (errors.py: the checks' loader names a test file that cannot be imported with its UsageError)
SHIPPED_GRADER = {"grader/__init__.py", "grader/chapter.py", "grader/paths.py", "grader/text.py", "grader/errors.py",
                  "grader/release.json"}


def test_release_holds_the_checker_alone(dist):
    with zipfile.ZipFile(dist / "student.zip") as archive:
        names = [name.removeprefix("student/") for name in archive.namelist()]
    engine = [name for name in names if name.startswith(ENGINE)]
    assert not engine, f"the release ships grading engine modules: {engine}"
    grader = {name for name in names if name.startswith("grader/")}
    assert {"grader/check/console.py", "grader/check/notebook.py"} <= grader
    assert not [name for name in grader if name not in SHIPPED_GRADER and not name.startswith("grader/check/")]
    others = {name for name in names if not name.startswith(("grader/", "tests/public/"))}
    assert others == {"README.md", "requirements.txt", "check.py", "exercises/attention.py",
                      "exercises/attention.ipynb"}
    assert not [name for name in names if "hidden" in name or "oracle" in name or "probes" in name]


def test_nothing_in_the_release_pins_a_version(dist):
    with zipfile.ZipFile(dist / "student.zip") as archive:
        texts = {name.removeprefix("student/"): archive.read(name).decode() for name in archive.namelist()}
    lines = [line.split("#")[0].strip() for line in texts["requirements.txt"].splitlines()]
    packages = [line for line in lines if line]
    assert sorted({re.split(r"[<>=~!]", line)[0] for line in packages}) == ["ipykernel", "numpy", "torch"]
    # One upper bound, behind a marker: numpy<2 where only PyTorch 2.2 exists (Intel Macs; issue 27).
    capped = [line for line in packages if "<" in line.split(";")[0]]
    assert capped == ['numpy>=1.24,<2; platform_system == "Darwin" and platform_machine == "x86_64"'], capped
    assert all(">=" in line and "==" not in line.split(";")[0] for line in packages), packages
    installing = ("README.md", "requirements.txt", "check.py", "exercises/attention.ipynb")
    pinned = [name for name in installing if re.search(r"[\w-]+ ?(==|~=)\s?\d", texts[name])]
    assert not pinned, pinned


def test_readme_says_how_to_install_check_and_submit(untouched):
    readme = (untouched / "README.md").read_text()
    submit = (ROOT / "solutions" / "release" / "how_to_submit.md").read_text().strip()
    assert "--index-url https://download.pytorch.org/whl/cpu" in readme and "Colab" in readme
    assert "## How to submit" in readme and submit in readme and "<!--" not in readme
    assert not re.search(r"\bmake (check|test|grade|student)\b", readme) and "public checks only" in readme.lower()
    notebook_text = (untouched / "exercises" / "attention.ipynb").read_text()
    assert "make check" not in notebook_text and json.dumps(submit)[1:-1] in notebook_text


# -- other Pythons -----------------------------------------------------------------------------------------------

def pyenv_python(version):
    found = sorted(PYENV.glob(f"{version}.*/bin/python3"))
    if not found:
        pytest.skip(f"no Python {version} under {PYENV}")
    return found[-1]


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_checker_compiles_and_says_what_is_missing_on_python(version, untouched, tmp_path):
    """These Pythons have no torch here: the checker compiles, its torch-free modules import, a usage
    error is answered, and a missing PyTorch is said in one plain sentence, with exit status 3."""
    python = pyenv_python(version)
    env = {"PATH": os.environ["PATH"], "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}
    compiled = subprocess.run([str(python), "-m", "compileall", "-q", "check.py", "grader", "tests"], cwd=untouched,
                              env=env, capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    has_torch = subprocess.run([str(python), "-c", "import torch"], env=env, capture_output=True).returncode == 0
    if has_torch:
        pytest.skip(f"Python {version} has torch here: the missing-package path cannot be shown")
    imported = subprocess.run([str(python), "-c", "import grader.chapter, grader.paths, grader.check.console, "
                               "grader.check.causes, grader.check.loader"], cwd=untouched, env=env,
                              capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    usage = check_py(untouched, "maskng", python=python)
    assert usage.returncode == 2 and ", ".join(STEP_KEYS) in usage.stderr, usage.stderr
    missing = check_py(untouched, "masking", python=python)
    assert missing.returncode == 3 and "Traceback" not in missing.stderr, missing.stderr
    assert f"PyTorch is not installed for this Python ({python}" in missing.stderr, missing.stderr
    in_notebook_ = subprocess.run([str(python), "-c", "import grader.check.notebook"], cwd=untouched, env=env,
                                  capture_output=True, text=True, timeout=60)
    assert "MissingPackage: PyTorch is not installed" in in_notebook_.stderr, in_notebook_.stderr


def test_every_step_key_is_listed_in_the_readme(untouched):
    readme = (untouched / "README.md").read_text()
    assert all(f"`{key}`" in readme for key in BY_KEY)
