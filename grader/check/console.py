"""The student's checker in a terminal: `python check.py [STEP] [FILE] [--device cpu]`.

Runs the public checks of one step (or all) on the student's file, in this interpreter, and
prints one line per step: a tick or a cross and the reason. Exit status 0 exactly when every
selected check passes, 1 when one fails, 2 for bad usage (an unknown step, a file that does not
exist), 3 when PyTorch or numpy is missing. The file checked is named at the top: by default
whichever of the notebook and the .py the student edited (see `choose_file`).

Imports no torch until the checks run: a usage error answers at once, and a missing PyTorch is
said plainly (grader.check.notebook) instead of in a traceback.
"""

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

from grader.chapter import BY_KEY, STEP_KEYS
from grader.paths import ROOT

EXERCISES = ROOT / "exercises"
CANDIDATES = ("attention.ipynb", "attention.py")
# Written into the release by `make student`: the exercises' fingerprints as released, and how to submit.
RELEASE_INFO = ROOT / "grader" / "release.json"
PASSED, FAILED, USAGE, MISSING_PACKAGE = 0, 1, 2, 3
INTERRUPTED = 130  # as a shell reports a command Ctrl-C stopped


class Usage(Exception):
    """Bad usage: the message says what to do; exit status 2."""


def exercise_code(text, suffix):
    """What the student writes in an exercise file: the .py's text, or a notebook's code cells
    (not outputs or metadata: running and saving a notebook changes those, not the code)."""
    text = text.replace("\r\n", "\n")  # a checkout or editor on Windows may turn every line end into CRLF
    if suffix != ".ipynb":
        return text
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return text
    sources = [cell.get("source", "") for cell in cells if isinstance(cell, dict) and cell.get("cell_type") == "code"]
    return "\n\x00\n".join("".join(source) if isinstance(source, list) else str(source) for source in sources)


def fingerprint(text, suffix):
    return hashlib.sha256(exercise_code(text, suffix).encode("utf-8", "replace")).hexdigest()


def release_info():
    """{"untouched": {file name: fingerprint}, "submit": text}, or {} outside a release."""
    try:
        return json.loads(RELEASE_INFO.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def edited(path, untouched):
    """Whether the student changed the code of an exercise file since the release (None: cannot tell)."""
    released = untouched.get(path.name)
    if not released:
        return None
    try:
        return fingerprint(path.read_text(encoding="utf-8"), path.suffix) != released
    except (OSError, UnicodeDecodeError):
        return True


def choose_file(given=None, folder=EXERCISES, untouched=None):
    """(path, why): the file to check, and why that one. By default the exercise file whose code the
    student changed; when both were changed (or this is no release), the one saved last."""
    if given:
        path = Path(given)
        if not path.is_file():
            raise Usage(f"{given} does not exist: give your attention.py or attention.ipynb")
        return path, "the file you named"
    present = [folder / name for name in CANDIDATES if (folder / name).is_file()]
    others = strays(folder)
    if not present:
        named = f"; found {', '.join(shown(path) for path in others)}" if others else ""
        raise Usage(f"neither {' nor '.join(CANDIDATES)} is in {shown(folder)}{named}: give the file to check, "
                    f"e.g. python check.py masking {shown(others[0]) if others else 'my_attention.py'}")
    untouched = release_info().get("untouched", {}) if untouched is None else untouched
    if len(present) == 1:
        missing = next(name for name in CANDIDATES if (folder / name) != present[0])
        if others and edited(present[0], untouched) is False:
            # The exercise file was renamed or moved: checking the untouched one would say "not implemented yet"
            # about work that is elsewhere. Name what is there instead of replacing it in silence.
            raise Usage(f"{shown(folder / missing)} is missing (renamed?) and {shown(present[0])} is as released; "
                        f"found {', '.join(shown(path) for path in others)}: check it by name, e.g. "
                        f"python check.py masking {shown(others[0])}")
        return present[0], f"the only exercise file here ({missing} is not in {shown(folder)})"
    changed = {path: edited(path, untouched) for path in present}
    other = {present[0]: present[1], present[1]: present[0]}
    mine = [path for path in present if changed[path]]
    if len(mine) == 1:
        return mine[0], f"you edited it; {other[mine[0]].name} is as released"
    if not mine and all(value is False for value in changed.values()):
        return present[0], f"neither it nor {present[1].name} is edited yet"
    newest = max(present, key=lambda path: path.stat().st_mtime)
    return newest, (f"{'you edited both; ' if len(mine) == 2 else ''}it was saved after {other[newest].name} "
                    f"(python check.py STEP {shown(other[newest])} checks that one)")


def strays(folder):
    """Other notebooks and .py files in the exercises folder: where a renamed exercise file would be (Jupyter's
    own checkpoints and copies of the checker are not)."""
    try:
        found = sorted(path for path in Path(folder).iterdir()
                       if path.suffix in (".ipynb", ".py") and path.name not in CANDIDATES and path.is_file())
    except OSError:
        return []
    return found


def shown(path):
    """`path` as the student would type it from here: relative to this folder when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="python check.py", description=__doc__.split("\n\n")[0],
        epilog="Exit status: 0 every check passes, 1 a check fails, 2 bad usage, 3 PyTorch or numpy missing, "
               "130 stopped with Ctrl-C.")
    parser.add_argument("step", nargs="?", help=f"one of: {', '.join(STEP_KEYS)} (default: every step)")
    parser.add_argument("file", nargs="?", help="the .py or .ipynb to check (default: the exercise file you edited)")
    parser.add_argument("--device", default="cpu", help="where the checks run: cpu (default), cuda or mps")
    args = parser.parse_args(argv)
    if args.step and args.step not in BY_KEY and Path(args.step).suffix in (".py", ".ipynb") and not args.file:
        args.step, args.file = None, args.step  # `python check.py my_attention.py`
    if args.step and args.step not in BY_KEY:
        raise Usage(f"unknown step {args.step!r}; the steps are: {', '.join(STEP_KEYS)}")
    if args.file in BY_KEY and not Path(args.file).exists():  # `python check.py masking dropout`
        raise Usage(f"one step at a time ({args.step!r}, then {args.file!r}), or none for every step")
    return args


def main(argv=None, stream=None):
    """The checker's command line; Ctrl-C and a closed pipe (`python check.py | head`) end it with one line, not a
    traceback through the checker's own code."""
    try:
        return _main(argv, stream)
    except KeyboardInterrupt:
        print("\nstopped (Ctrl-C): the steps after the one running were not checked", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:  # the reader of the output went away: say nothing more, to it or to a closed stdout
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return FAILED


def _main(argv=None, stream=None):
    for output in (sys.stdout, sys.stderr):  # a console that cannot show a character gets "?", not a traceback
        if hasattr(output, "reconfigure"):
            output.reconfigure(errors="replace")
    stream = stream or sys.stdout
    try:
        args = parse(argv)
        path, why = choose_file(args.file)
    except Usage as error:
        print(f"error: {error}", file=sys.stderr)
        return USAGE
    try:
        from grader.check import notebook
    except ImportError as error:  # grader.check.notebook says which package and what to do
        print(f"error: {error}", file=sys.stderr)
        return MISSING_PACKAGE
    problem = notebook.device_problem(args.device)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return USAGE
    print(f"Checking {shown(path)}: {why}.\n{notebook.PUBLIC_ONLY[0].upper()}{notebook.PUBLIC_ONLY[1:]}.", file=stream)
    results = notebook.check_file(path, [args.step] if args.step else list(STEP_KEYS), args.device, stream)
    if results is None:
        return FAILED
    if notebook.summary_line(results):
        print(notebook.summary_line(results), file=stream)
    passed = all(result.passed for result in results)
    submit = release_info().get("submit")
    if passed and len(results) == len(STEP_KEYS) and submit:
        print(f"How to submit: {submit}", file=stream)
    return PASSED if passed else FAILED
