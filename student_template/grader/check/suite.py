"""Find the graded tests: `@graded` functions in tests/public and tests/hidden.

When grading, test modules are the judge's own (trusted) code, imported in the
judge, never in a student's process; the student's checker imports the public
ones in the student's own interpreter. Each test folder is a package
(`tests/hidden/oracle.py` is imported by its tests as `from .oracle import ...`):
it is loaded under a private name from its declared path, without touching
`sys.path`, so the same folder can be found in the kit, the Otter zip or an
nbgrader course.
"""

import contextlib
import functools
import importlib.util
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from grader.chapter import STEP_KEYS, points_of
from grader.errors import UsageError
from grader.paths import TESTS

VISIBILITY = {"public": "visible", "hidden": "after_published"}


@dataclass(frozen=True)
class GradedTest:
    name: str
    step: str
    points: float  # this test's share of its step's points (grader.chapter), from its weight
    visibility: str
    kind: str  # "public" or "hidden"
    function: object
    weight: float = 1.0
    book: bool = False  # a public check of the chapter's printouts: its seeds are never moved (check.public_inputs)

    @property
    def moved(self):
        """Whether grading moves this check's seeds (check.public_inputs): a public check's, not the book's."""
        return self.kind == "public" and not self.book


def load_package(folder, name):
    """Import the package in `folder` (its __init__.py, if any) as `name`; return the module."""
    if name in sys.modules and getattr(sys.modules[name], "__path__", None) == [str(folder)]:
        return sys.modules[name]
    init = folder / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init if init.is_file() else None,
                                                  submodule_search_locations=[str(folder)])
    if spec is None:  # a folder without __init__.py: an empty package over it
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if spec.loader is not None:
        try:
            with _named_on_failure(init):
                spec.loader.exec_module(module)
        except UsageError:
            del sys.modules[name]  # a half-run package would be taken for the loaded one next time
            raise
    return module


def _package_name(folder, kind):
    # One private name per folder: the kit's tests and an unpacked release may both be loaded.
    return f"kit_tests_{abs(hash(str(folder.resolve()))):x}.{kind}"


def load_test_modules(folder, kind):
    """The test_*.py modules of one folder, imported as submodules of its package."""
    folder = Path(folder)
    package = _package_name(folder, kind)
    parent = package.split(".")[0]
    if parent not in sys.modules:
        spec = importlib.machinery.ModuleSpec(parent, None, is_package=True)
        spec.submodule_search_locations = []
        sys.modules[parent] = importlib.util.module_from_spec(spec)
    load_package(folder, package)
    modules = []
    for path in sorted(folder.glob("test_*.py")):
        with _named_on_failure(path):
            modules.append(importlib.import_module(f"{package}.{path.stem}"))
    return modules


@contextlib.contextmanager
def _named_on_failure(path):
    """A test file that cannot be imported (a syntax error, a name it lacks, an exception at its top level) is
    the instructor's to mend: one line naming the file, the line and the error, not the importer's traceback."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 - whatever the file raises, the command stops on it
        line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else _line_in(error, path)
        where = f"{path}, line {line}" if line else str(path)
        said = re.sub(r"kit_tests_[0-9a-f]+\.", "", str(error))  # the private package name means nothing to a reader
        raise UsageError(f"{where}: this test file cannot be imported ({type(error).__name__}: {said}); mend it, "
                         "then run the command again") from None


def _line_in(error, path):
    """The line of `path` where `error` was raised (its innermost frame in that file), or None."""
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if Path(frame.filename) == Path(path)]
    return lines[-1] if lines else None


def discover(tests_root=TESTS, kinds=("public", "hidden")):
    """The graded tests of `kinds`, grouped by step in chapter order, in file order within a step.

    A test's points are its step's points (declared once, in grader.chapter) shared
    out by the weights of every test of that step under `tests_root`, public and
    hidden, whichever `kinds` are asked for: public-only grading gives each public
    test the points it has in the full suite."""
    found = []
    for kind in VISIBILITY:
        folder = Path(tests_root) / kind
        if not folder.is_dir():
            continue
        for module in load_test_modules(folder, kind):
            for value in vars(module).values():
                info = getattr(value, "graded", None)
                if info and callable(value) and getattr(value, "__module__", None) == module.__name__:
                    found.append((info, kind, value))
    names = [info["name"] for info, _, _ in found]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise UsageError(f"graded test names must be unique, and {sorted(duplicates)} are used twice under "
                         f"{tests_root}: rename one of each")
    weights = {}
    for info, _, _ in found:
        weights[info["step"]] = weights.get(info["step"], 0.0) + info["weight"]
    tests = [GradedTest(info["name"], info["step"], points_of(info["step"], info["weight"], weights[info["step"]]),
                        VISIBILITY[kind], kind, value, info["weight"], info.get("book", False))
             for info, kind, value in found if kind in kinds]
    order = {key: index for index, key in enumerate(STEP_KEYS)}
    return sorted(tests, key=lambda test: (order[test.step], test.kind != "public",
                                           test.function.__code__.co_firstlineno))


def max_points(tests):
    totals = {key: 0.0 for key in STEP_KEYS}
    for test in tests:
        totals[test.step] += test.points
    return totals


def hidden_secret(tests):
    """The bytes of the hidden tests' files among `tests` (b"" without any): what makes a submission's
    public-input shift unknowable to students (check.public_inputs), who never see these files."""
    return _file_bytes(tuple(sorted({test.function.__code__.co_filename for test in tests if test.kind == "hidden"})))


@functools.lru_cache(maxsize=8)
def _file_bytes(paths):
    return b"".join(Path(path).read_bytes() for path in paths)
