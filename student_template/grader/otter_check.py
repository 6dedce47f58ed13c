"""The kit's tests as Otter test cases: what the generated Otter test files call.

`make publish` writes one Otter test file per step (exception format): each
case is one line, `check(env, KIT, "<kit test name>")`, where `env` is the
notebook's or script's globals (Otter passes them to a parameter named `env`)
and KIT the folder holding the kit's `grader/` package and `tests/public/`
(hidden tests: `kit_hidden_tests/hidden/` there, see `notebook_checks`). The
kit test runs through the same Student interface as the sandboxed grader, over
those globals in Otter's kernel, and a failure raises with its teaching message.

Otter seeds numpy and `random` at most, never torch: `NotebookChecks` seeds
torch before each case so that a case gives the same verdict wherever it runs.
"""

from .notebook_checks import NotebookChecks

_CHECKS = {}  # one per (globals, kit folder): the kit's tests are discovered once per kernel


def check(env, kit, name):
    """Run the kit test `name` on the globals `env`; raise an AssertionError if it fails."""
    checks = _CHECKS.get((id(env), kit))
    if checks is None or checks.namespace is not env:
        checks = _CHECKS[(id(env), kit)] = NotebookChecks(env, kit)
    checks.check(name)
