"""The fast tier (`make test-fast`) leaves out only what is marked slow, and every slow test says why.

`make test` runs everything; `make test-fast` is the same command with `-m "not slow"`. A test is marked
slow by `@pytest.mark.slow(reason=...)` (on the test or in its module's pytestmark) or by a line of
tests/kit/conftest.py (SLOW_FIXTURES, SLOW). A mark without its reason, or a list entry naming a file, test
or fixture that no longer exists, would leave a newcomer guessing why a test is not in the fast tier.
"""

import ast
import re

from grader.paths import ROOT

TESTS = ROOT / "tests"
KIT = TESTS / "kit"
# Launches of `python -m grader` kept in the fast tier on purpose: the real process, its exit status and output.
SMOKE = ("test_usage.py::test_the_exit_status_is_the_process_s",
         "test_grading.py::test_cli_single_file_writes_gradescope_results",
         "test_io.py::test_an_unwritable_out_is_refused_before_grading")


def all_test_files():
    return sorted(path for path in TESTS.rglob("test_*.py"))


def is_slow_mark(node):
    """`pytest.mark.slow`, called or not."""
    return (isinstance(node, ast.Attribute) and node.attr == "slow" and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark")


def slow_marks_without_reason(path):
    """[line] of each `pytest.mark.slow` in `path` that is not called with a non-empty reason=."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    missing = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and is_slow_mark(node.func):
            reason = next((keyword.value for keyword in node.keywords if keyword.arg == "reason"), None)
            if not (isinstance(reason, ast.Constant) and isinstance(reason.value, str) and reason.value.strip()):
                missing.append(node.lineno)
        elif is_slow_mark(node) and id(node) not in called:
            missing.append(node.lineno)
    return missing


def test_every_slow_mark_in_a_test_file_says_why():
    missing = {str(path.relative_to(ROOT)): lines for path in all_test_files()
               if (lines := slow_marks_without_reason(path))}
    assert missing == {}, "write @pytest.mark.slow(reason='what costs the time')"


def test_the_student_checks_are_never_slow():
    """tests/public and tests/hidden are what students and the grader run: always in the fast tier."""
    marked = [str(path.relative_to(ROOT)) for path in all_test_files()
              if path.parent != KIT and "mark.slow" in path.read_text(encoding="utf-8")]
    assert marked == []


def defined_fixtures():
    """{name: [file]} of every fixture defined in the conftest.py and test files under tests/."""
    found = {}
    for path in sorted([*TESTS.rglob("conftest.py"), *all_test_files()]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(decorator)
                                                         for decorator in node.decorator_list):
                found.setdefault(node.name, []).append(path.name)
    return found


def test_every_entry_of_the_slow_lists_names_what_exists_once(tiers):
    fixtures = defined_fixtures()
    for name, reason in tiers["slow_fixtures"].items():
        assert reason.strip(), name
        assert len(fixtures.get(name, [])) == 1, f"SLOW_FIXTURES names {name!r}, defined in {fixtures.get(name)}"
    for entry, reason in tiers["slow"].items():
        assert reason.strip(), entry
        file, _, test = entry.partition("::")
        path = KIT / file
        assert path.is_file(), f"SLOW names {file}, which is not in tests/kit"
        if test:
            assert re.search(rf"^def {re.escape(test)}\(", path.read_text(encoding="utf-8"), re.M), entry


def test_the_longest_first_list_names_kit_test_files_once(tiers):
    names = tiers["longest_first"]
    assert len(set(names)) == len(names)
    assert [name for name in names if not (KIT / name).is_file()] == [], "LONGEST_FIRST names a file not in tests/kit"


def test_every_collected_slow_test_says_why_and_the_smoke_launches_stay_fast(tiers):
    """Over what this session collected (all of it under `make test` and `make test-fast`)."""
    for item in tiers["collected"]:
        mark = item.get_closest_marker("slow")
        if mark is None:
            continue
        reason = mark.kwargs.get("reason") or (mark.args[0] if mark.args else "")
        assert isinstance(reason, str) and reason.strip(), f"{item.nodeid} is marked slow without a reason"
        assert item.path.parent == KIT, f"{item.nodeid}: only the kit's own tests may be slow"
        assert f"{item.path.name}::{item.originalname}" not in SMOKE, f"{item.nodeid} is a smoke test of the fast tier"


def make_rule(target):
    """(prerequisites, recipe lines) of `target` in the Makefile."""
    text = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{re.escape(target)}:(.*)\n((?:\t.*\n)+)", text, re.M)
    assert match, f"the Makefile has no {target} target"
    return match.group(1).split(), [line.strip() for line in match.group(2).splitlines()]


def test_make_test_fast_is_make_test_without_the_slow_tests():
    """Set up as `make test` is (the same prerequisites) and the same pytest command, with -m "not slow"."""
    prerequisites, recipe = make_rule("test")
    fast_prerequisites, fast_recipe = make_rule("test-fast")
    assert fast_prerequisites == prerequisites
    assert fast_recipe == [recipe[-1] + ' -m "not slow"']
