"""Find the graded tests: `@graded` functions in tests/public and tests/hidden.

Test modules are the judge's own (trusted) code; they are imported here, in
the judge, never in a student's process.
"""

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from .steps import STEP_KEYS

ROOT = Path(__file__).resolve().parent.parent
VISIBILITY = {"public": "visible", "hidden": "after_published"}


@dataclass(frozen=True)
class GradedTest:
    name: str
    step: str
    points: float
    visibility: str
    kind: str  # "public" or "hidden"
    function: object


def discover(tests_root=ROOT / "tests", kinds=("public", "hidden")):
    """All graded tests, grouped by step in chapter order, in file order within a step."""
    found = []
    for kind in kinds:
        folder = Path(tests_root) / kind
        if not folder.is_dir():
            continue
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
        for path in sorted(folder.glob("test_*.py")):
            spec = importlib.util.spec_from_file_location(f"kit_tests.{kind}.{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            for value in vars(module).values():
                info = getattr(value, "graded", None)
                if info and callable(value):
                    found.append(GradedTest(info["name"], info["step"], info["points"], VISIBILITY[kind], kind, value))
    names = [test.name for test in found]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise ValueError(f"graded test names must be unique: {sorted(duplicates)}")
    order = {key: index for index, key in enumerate(STEP_KEYS)}
    return sorted(found, key=lambda test: (order[test.step], test.kind != "public",
                                           test.function.__code__.co_firstlineno))


def max_points(tests):
    totals = {key: 0.0 for key in STEP_KEYS}
    for test in tests:
        totals[test.step] += test.points
    return totals
