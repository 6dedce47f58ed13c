"""Three requirement sets, one owner each, each listing exactly what its side imports:

  requirements.txt          what grading imports (the grader's engine and the tests it runs): the
                            Gradescope image gets exactly this, the Otter image its part
  requirements-publish.txt  the LMS tools `make publish` and `make grade ENGINE=otter` run
  requirements-test.txt     what only the kit's own tests import

Nothing in a runtime set is there only for a test, and every pin is exact (`name==version`)."""

import ast
import functools
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

from grader.build import shipping
from grader.integrations import gradescope, otter
from grader.paths import ROOT

SETS = ("requirements.txt", "requirements-publish.txt", "requirements-test.txt")
# Publishing needs these without importing them: nbgrader's and Otter's kernel stack, pinned so
# autograde runs the same everywhere. Each must be a dependency of a tool we use, or the kernel itself.
RUN_NOT_IMPORTED = {
    "nbconvert": "nbgrader runs notebooks through it",
    "nbclient": "nbconvert executes notebooks with it",
    "jupyter-client": "nbclient talks to the kernel with it",
    "ipykernel": "the python3 kernel nbgrader autograde and `otter run` execute notebooks in",
    "otter-grader": "run as `python -m otter generate` and `python -m otter run`",
    "nbgrader": "run as `python -m nbgrader`",
}


def normal(name):
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(name):
    """{distribution: version} of one requirements file; every line pinned exactly."""
    found = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([\w.+!-]+)", line)
        assert match, f"{name}: {line!r} is not pinned exactly (name==version)"
        found[normal(match[1])] = match[2]
    return found


def imported_names(paths):
    """Top-level names of the third-party modules that `paths` import anywhere (function-level imports too)."""
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
    return names - set(sys.stdlib_module_names) - {"grader", "tests", "__future__"}


@functools.lru_cache(maxsize=None)
def providers_of_modules():
    return metadata.packages_distributions()


def distributions(names):
    """The installed distributions that provide these top-level modules."""
    providers = providers_of_modules()
    missing = sorted(name for name in names if name not in providers)
    assert not missing, f"imported but not installed: {missing}"
    return {normal(providers[name][0]) for name in names}


@functools.lru_cache(maxsize=None)
def grading_files():
    """What `python -m grader grade` runs: the engine as it ships to Gradescope, and the tests it runs."""
    engine = shipping.modules_needed(shipping.ENGINE, leave_out=shipping.INSTRUCTOR_ONLY)
    return (*engine, *(ROOT / name for name in shipping.test_files()))


def otter_files():
    return [*shipping.modules_needed(["grader.integrations.incell"]), *(ROOT / name for name in shipping.test_files())]


def publish_files():
    grading = set(grading_files())
    return [path for path in (ROOT / "grader").rglob("*.py") if path not in grading]


def kit_test_files():
    """The kit's own test code: tests/kit's modules and what they import from tests/ (not the submissions
    kept there as data), the shared conftest, and the benchmark."""
    todo = [*(ROOT / "tests").glob("*.py"), *(ROOT / "tests" / "kit").glob("*.py"), *(ROOT / "bench").glob("*.py")]
    found = set()
    while todo:
        path = todo.pop()
        if path in found or "public" in path.parts or "hidden" in path.parts:
            continue
        found.add(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("tests")):
                base = path.parents[node.level - 1] if node.level else ROOT
                folder = base.joinpath(*(node.module or "").split(".")) if node.module else base
                for candidate in [folder.with_suffix(".py"), folder / "__init__.py",
                                  *(folder / f"{alias.name}.py" for alias in node.names)]:
                    if candidate.is_file():
                        todo.append(candidate)
    return sorted(found)


def image_packages(text):
    """The distributions a generated image requirements file installs."""
    return {normal(re.split(r"[=<>~!]", line, maxsplit=1)[0]) for line in text.splitlines()
            if line.strip() and not line.startswith(("#", "-"))}


def test_every_requirement_is_pinned_and_in_one_set_only():
    seen = {}
    for name in SETS:
        for package in pins(name):
            assert package not in seen, f"{package} is in {seen.get(package)} and {name}"
            seen[package] = name


def test_the_grading_set_is_exactly_what_grading_imports():
    imported = distributions(imported_names(grading_files()))
    assert set(pins("requirements.txt")) == imported


def test_the_gradescope_image_holds_only_what_grading_imports():
    image = gradescope.gradescope_requirements()
    assert image_packages(image) == distributions(imported_names(grading_files()))
    assert "torch==2.13.0+cpu" in image.splitlines() or any(line.endswith("+cpu") for line in image.splitlines())
    assert not image_packages(image) & {"pytest", "pillow", "packaging", "python-dateutil", "tzdata"}


def test_the_otter_image_holds_what_its_kernel_imports():
    assert image_packages(otter.requirements()) == distributions(imported_names(otter_files()))


def test_the_publish_set_is_what_publishing_imports_or_runs():
    imported = distributions(imported_names(publish_files())) - set(pins("requirements.txt"))
    publish = set(pins("requirements-publish.txt"))
    assert imported <= publish, f"publishing imports {sorted(imported - publish)}: pin them in requirements-publish.txt"
    unexplained = sorted(publish - imported - set(RUN_NOT_IMPORTED))
    assert not unexplained, f"nothing imports or runs {unexplained}: remove them from requirements-publish.txt"
    sources = "\n".join(path.read_text() for path in (ROOT / "grader").rglob("*.py"))
    for tool in ("otter", "nbgrader"):  # the tools really are run
        assert re.search(rf'"-m", "{tool}"', sources), tool


TOOLS = {"ruff", "mypy"}  # run by tests/kit/test_habits.py as commands (python -m ruff), never imported
# pytest's plugin that runs `make test`'s files side by side (the Makefile's -n), and what it needs; never imported.
PLUGINS = {"pytest-xdist", "execnet"}


def test_the_test_set_is_what_only_the_kit_tests_import():
    runtime = set(pins("requirements.txt")) | set(pins("requirements-publish.txt"))
    grading = distributions(imported_names(grading_files()))
    for package in pins("requirements-test.txt"):
        assert package not in grading, f"{package} is a grading import"
    needed = distributions(imported_names(kit_test_files())) - runtime
    assert needed | TOOLS | PLUGINS == set(pins("requirements-test.txt"))


@pytest.mark.parametrize("name", SETS)
def test_the_pins_are_what_is_installed(name):
    """`make test` installs the three sets into .venv: the versions the tests ran with are the pins."""
    for package, version in pins(name).items():
        installed = metadata.version(package)
        assert installed.split("+")[0] == version.split("+")[0], (package, installed, version)


def test_make_installs_all_three_sets_for_make_test():
    makefile = (ROOT / "Makefile").read_text()
    install = next(line for line in makefile.splitlines() if "pip install" in line)
    assert all(f"-r {name}" in install for name in SETS), install
