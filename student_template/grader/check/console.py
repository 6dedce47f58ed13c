"""The student's checker in a terminal: `python check.py [STEP] [FILE]`.

Runs the public checks of one step (or all) on the student's file, in this
interpreter, and prints one line per step: a tick or a cross and the reason.
Exit status 0 exactly when every selected check passes, 1 when one fails, 2 for
bad usage (an unknown step, a file that does not exist). The file checked is
named at the top: by default whichever of the notebook and the .py the student
edited last.
"""

import argparse
import sys
from pathlib import Path

from grader.chapter import BY_KEY, STEP_KEYS, STEPS
from grader.paths import ROOT, TESTS

EXERCISES = ROOT / "exercises"
CANDIDATES = ("attention.ipynb", "attention.py")


class Usage(Exception):
    """Bad usage: the message says what to do; exit status 2."""


def marks(stream):
    """(pass, fail) marks this terminal can print: a Windows console may not encode ✓ and ✗."""
    try:
        "✓✗".encode(stream.encoding or "ascii")
        return "✓", "✗"
    except (UnicodeEncodeError, LookupError):
        return "PASS", "FAIL"


def choose_file(given=None, folder=EXERCISES):
    """(path, why): the file to check, and why that one."""
    if given:
        path = Path(given)
        if not path.is_file():
            raise Usage(f"{given} does not exist: give your attention.py or attention.ipynb")
        return path, "as given"
    present = [folder / name for name in CANDIDATES if (folder / name).is_file()]
    if not present:
        raise Usage(f"neither {' nor '.join(CANDIDATES)} is in {folder}: give the file to check, "
                    "e.g. python check.py masking my_attention.py")
    if len(present) == 1:
        return present[0], "the only exercise file"
    newest = max(present, key=lambda path: path.stat().st_mtime)
    other = next(path for path in present if path != newest)
    return newest, f"edited more recently than {other.name}; name the file to check the other one"


def parse(argv):
    parser = argparse.ArgumentParser(prog="python check.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("step", nargs="?", help=f"one of: {', '.join(STEP_KEYS)} (default: every step)")
    parser.add_argument("file", nargs="?", help="the .py or .ipynb to check (default: see above)")
    args = parser.parse_args(argv)
    if args.step and args.step not in BY_KEY and Path(args.step).suffix in (".py", ".ipynb") and not args.file:
        args.step, args.file = None, args.step  # `python check.py my_attention.py`
    if args.step and args.step not in BY_KEY:
        raise Usage(f"unknown step {args.step!r}; the steps are: {', '.join(STEP_KEYS)}")
    return args


def step_line(step, verdicts, mark_pass, mark_fail):
    """One line for a step: its mark, title and the first reason it failed (or how many passed)."""
    failed = [(name, message) for name, passed, message in verdicts if not passed]
    head = f"{mark_fail if failed else mark_pass} {step.number}. {step.key:<20}"
    if not failed:
        return f"{head} {len(verdicts)}/{len(verdicts)} checks passed"
    if all("not implemented yet" in message for _, message in failed):
        return f"{head} not implemented yet"
    name, message = failed[0]
    reason = message.strip().splitlines()[0] if message.strip() else "failed"
    return f"{head} {len(failed)} of {len(verdicts)} checks failed\n    {name.partition(': ')[2]}: {reason}"


def run(step_keys, path, stream):
    """Run the public checks of `step_keys` on `path`; print a line per step; True if all pass."""
    from grader.check.loader import SubmissionError
    from grader.check.runner import run_test
    from grader.check.student import in_process
    from grader.check.suite import discover

    mark_pass, mark_fail = marks(stream)
    try:
        student, problems = in_process(path)
    except SubmissionError as error:
        print(f"{mark_fail} {error}", file=stream)
        return False
    for problem in problems:
        print(f"  note: {problem}", file=stream)
    tests = discover(TESTS, kinds=("public",))
    passed_all = True
    for key in step_keys:
        verdicts = [(test.name, *run_test(test, student)) for test in tests if test.step == key]
        passed_all &= all(passed for _, passed, _ in verdicts)
        print(step_line(BY_KEY[key], verdicts, mark_pass, mark_fail), file=stream)
    return passed_all


def main(argv=None, stream=None):
    stream = stream or sys.stdout
    try:
        args = parse(argv)
        path, why = choose_file(args.file)
    except Usage as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"Checking {path} ({why}); public checks only: the course's grader also runs hidden ones.", file=stream)
    keys = [args.step] if args.step else [step.key for step in STEPS]
    return 0 if run(keys, path, stream) else 1
