"""Which of the grader's modules a shipped copy needs: the closure of an entry point's imports.

The Gradescope zip, the Otter zip, the nbgrader course and the student release
each carry part of the grader, as files laid out as in this repository (so
`grader.check.testing` is `grader/check/testing.py` wherever it ships). Only
what the entry points import, directly or not, and the packages on the way,
is shipped: a release never carries the grading engine by accident.
"""

import ast
from collections.abc import Iterable
from pathlib import Path

from grader.paths import ROOT


def module_path(name: str) -> Path:
    """grader.check.testing -> ROOT/grader/check/testing.py (a package -> its __init__.py)."""
    base = ROOT.joinpath(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def imported_modules(path: str | Path) -> set[str]:
    """The grader modules a source file imports (absolute `grader.x` imports, top level or not)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
        if (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                and node.module.split(".")[0] == "grader"):
            found.add(node.module)
            for alias in node.names:  # `from grader.check import wire` imports a module
                if module_path(f"{node.module}.{alias.name}").is_file():
                    found.add(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "grader")
    return found


def modules_needed(entry_modules: Iterable[str] = (), entry_files: Iterable[str] = (),
                   leave_out: Iterable[str] = ()) -> list[Path]:
    """Sorted source paths of every grader module the entries need, with their packages' __init__.py;
    modules under the `leave_out` prefixes (e.g. grader.build: never run where this ships) are not followed."""
    todo = list(entry_modules)
    for path in entry_files:
        todo.extend(imported_modules(ROOT / path))
    needed = set()
    while todo:
        name = todo.pop()
        if any(name == prefix or name.startswith(prefix + ".") for prefix in leave_out):
            continue
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__, a/b/__init__ too
            prefix = ".".join(parts[:depth])
            if prefix not in needed and module_path(prefix).is_file():
                needed.add(prefix)
                todo.extend(imported_modules(module_path(prefix)))
    return sorted(module_path(name) for name in needed)


def shipped_files(entry_modules: Iterable[str] = (), entry_files: Iterable[str] = (), leave_out: Iterable[str] = ()
                  ) -> dict[str, str]:
    """{path relative to the repository: text} of the modules the entries need."""
    return {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
            for path in modules_needed(entry_modules, entry_files, leave_out)}


def test_files(kinds: Iterable[str] = ("public", "hidden")) -> dict[str, str]:
    """{path relative to the repository: text} of the kit's test folders of `kinds` (packages)."""
    return {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
            for kind in kinds for path in sorted((ROOT / "tests" / kind).glob("*.py"))}


# The grading engine as the Gradescope zip runs it: the CLI and the fork server's preload,
# without what only the instructor's machine runs (building releases, the fault catalogue, the
# cohort integrity check of a whole class).
ENGINE = ("grader.__main__", "grader.cli", "grader.sandbox.forkserver")
INSTRUCTOR_ONLY = ("grader.build", "grader.faults", "grader.feedback.integrity")
