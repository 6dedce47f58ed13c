"""The grader's layout holds: no import circles, tools imported only where they belong, torch only where needed."""

import ast
import subprocess
import sys

from grader.paths import ROOT

GRADER = ROOT / "grader"


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def grader_imports(path):
    """The grader modules `path` imports anywhere in its code (function-level imports included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("grader"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith("grader"))
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; the grader uses absolute `grader.` imports")
    return {name for name in names if name in MODULES}


MODULES = {module_name(path): path for path in GRADER.rglob("*.py")}


def third_party_imports(path):
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found


def circles(graph):
    """Every import circle (as a list of modules), found by depth-first search."""
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if state.get(other) == "open":
                found.append(stack[stack.index(other):] + [other])
            elif other not in state:
                visit(other, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def test_no_import_circles_in_the_grader():
    # A module imports its own package's __init__ implicitly; that is not a circle worth naming.
    graph = {name: {other for other in grader_imports(path) if not name.startswith(other + ".")}
             for name, path in MODULES.items()}
    assert circles(graph) == []


# The layers, lowest first (grader/__init__.py says the same in words): a module imports only its own layer's
# modules and lower layers'. The top-level modules are the lowest layer (but the result model, grader.results, read
# by feedback and written by the judge), the command line the highest.
LAYERS = (("grader", "grader.chapter", "grader.paths", "grader.text", "grader.outfiles", "grader.stopping",
           "grader.errors", "grader.markers"),
          ("grader.check",), ("grader.sandbox",), ("grader.results",), ("grader.feedback",), ("grader.judging",),
          ("grader.cohort",), ("grader.faults",), ("grader.build",), ("grader.integrations",),
          ("grader.cli", "grader.__main__"))


def layer_of(module):
    """The index in LAYERS of `module` (a subpackage's modules share its layer); None for a module of no layer."""
    found = None
    for index, members in enumerate(LAYERS):
        if any(module == member or (member != "grader" and module.startswith(member + ".")) for member in members):
            found = index
    return found


def test_every_module_has_a_layer():
    assert [name for name in MODULES if layer_of(name) is None] == []


def test_lower_layers_never_import_higher_ones():
    upward = sorted(f"{name} imports {other}" for name, path in MODULES.items() for other in grader_imports(path)
                    if layer_of(other) > layer_of(name))
    assert upward == [], "a lower layer imports a higher one (see LAYERS)"


def test_the_layer_rule_catches_an_upward_import():
    assert layer_of("grader.check.wire") < layer_of("grader.sandbox.transport") < layer_of("grader.cli")
    assert layer_of("grader.markers") < layer_of("grader.faults.mutation") < layer_of("grader.build.exercises")


def test_the_circle_finder_finds_circles():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_only_integrations_import_otter_or_nbgrader():
    offenders = sorted(name for name, path in MODULES.items()
                       if third_party_imports(path) & {"otter", "nbgrader"} and not name.startswith("grader.integrations"))
    assert offenders == []


def test_the_engine_never_edits_sys_path():
    """The engine finds tests/ by a declared path (grader.paths), never through sys.path."""
    offenders = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", "") == "sys":
                offenders.append(f"{name}:{node.lineno}")
    assert offenders == []


def test_what_only_reads_results_does_not_import_torch():
    readers = ["grader.judging.model", "grader.judging.results_json", "grader.feedback.report",
               "grader.feedback.page", "grader.cohort.tables", "grader.integrations.lms", "grader.cli",
               "grader.chapter", "grader.check.causes", "grader.sandbox.limits"]
    code = (f"import sys\nfor name in {readers!r}:\n    __import__(name)\n"
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_every_subpackage_says_what_it_owns_and_may_import():
    for package in sorted(path.parent for path in GRADER.rglob("__init__.py") if path.parent != GRADER):
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc and "May import" in doc, f"{package.name}/__init__.py: say what it owns and may import"
