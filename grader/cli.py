"""Command line: `python -m grader grade PATH` and `python -m grader generate`.

Exit status 0 whenever grading completed, whatever the scores; 2 for bad usage.
"""

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import feedback, report
from . import results as results_io
from .judge import Options, grade_submission
from .submissions import UsageError, collect
from .suite import ROOT, discover, max_points

DEFAULT_CLASS = ROOT / "samples" / "class"


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().rstrip("ib").rstrip("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def grade_command(args):
    tests = discover(kinds=("public",) if args.public_only else ("public", "hidden"))
    maxima = max_points(tests)
    options = Options(device=args.device, time_limit=args.time_limit, memory_limit=parse_size(args.memory_limit))
    collected = collect(args.path)
    try:
        for problem in collected.problems:
            print(f"note: {problem}", file=sys.stderr)
        if not collected.submissions:
            raise UsageError(f"no .py or .ipynb submissions found in {args.path}")
        out = Path(args.out)
        started = time.monotonic()
        single = len(collected.submissions) == 1 and not Path(args.path).is_dir()

        def one(item):
            name, path = item
            result = grade_submission(path, name, tests, options)
            target = Path(args.results) if (single and args.results) else (
                out / "results.json" if single else out / "results" / f"{name}.json")
            results_io.write_results_json(result, maxima, target)
            if single:
                feedback.write_page_beside(target)
            print(f"graded {name}: {result.score:g}/{sum(maxima.values()):g} in {result.seconds:.1f}s",
                  file=sys.stderr)
            return result

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            graded = list(pool.map(one, collected.submissions))
        if not single:
            write_class_files(out, graded, maxima, args)
        print(results_io.score_table(graded, maxima))
        where = args.results if (single and args.results) else (out / "results.json" if single else out)
        print(f"\n{len(graded)} submission(s) graded in {time.monotonic() - started:.1f}s; results in {where}")
        return 0
    finally:
        collected.cleanup()


def write_class_files(out, graded, maxima, args):
    """Everything written once per class, after all its submissions are graded (grades.csv...)."""
    results_io.write_atomic(out / "grades.csv", results_io.grades_csv(graded))
    if getattr(args, "roster", None):  # Canvas and Moodle import files, one row per roster student
        from . import lms

        for note in lms.write_lms_files(out, graded, maxima, args.roster):
            print(f"note: {note}", file=sys.stderr)
    feedback.write_pages(out)  # OUT/feedback/<name>.html, from OUT/results (so merges get them too)
    print(report.write_report(out))


def generate_command(args):
    from .generate import check_fresh, generate_all

    if args.check:
        stale = check_fresh()
        for path in stale:
            print(f"stale: {path} (run `make student`)")
        return 1 if stale else 0
    for path in generate_all():
        print(f"wrote {path}")
    return 0


def report_command(args):
    """The cohort report (and the feedback pages) of an OUT folder, from its results/*.json."""
    out = Path(args.out)
    if not (out / "results").is_dir():
        raise UsageError(f"{out} has no results/ folder: grade a class into it first (make grade OUT={out})")
    if args.pages:
        feedback.write_pages(out, force=True)
    print(report.write_report(out))
    return 0


def publish_command(args):
    from .publish import PARTS, publish

    for path in publish(args.dist, args.parts or PARTS):
        print(f"wrote {path}")
    return 0


def roster_argument(text):
    """--roster: checked before any grading, so a bad roster costs seconds, not a graded class."""
    from . import lms

    try:
        lms.read_roster(text)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise argparse.ArgumentTypeError(f"cannot use {text} as a roster: {error}") from None
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    grade = commands.add_parser("grade", help="grade a .py, .ipynb, folder or .zip of submissions")
    grade.add_argument("path", nargs="?", default=str(DEFAULT_CLASS), help="default: the bundled sample class")
    grade.add_argument("--out", default="out", help="folder for results (default: out)")
    grade.add_argument("--results", default=None, help="results.json path for a single submission")
    grade.add_argument("--jobs", type=int, default=2, help="submissions graded at once (default 2)")
    grade.add_argument("--time-limit", type=float, default=10.0, help="seconds per step (default 10)")
    grade.add_argument("--memory-limit", default="2GiB", help="memory cap per step (default 2GiB)")
    grade.add_argument("--device", default="cpu", help="cpu or cuda")
    grade.add_argument("--public-only", action="store_true", help="grade with the public tests only")
    grade.add_argument("--roster", type=roster_argument, default=None,
                       help="class list CSV (a Canvas gradebook export, a Moodle or plain roster): also write "
                            "OUT/canvas_grades.csv and OUT/moodle_grades.csv, empty for students who did not submit")
    cohort = commands.add_parser("report", help="write OUT/report.html (the cohort report) from OUT/results")
    cohort.add_argument("--out", default="out", help="the graded class folder (default: out)")
    cohort.add_argument("--pages", action="store_true", help="also rewrite the feedback pages OUT/feedback/*.html")
    generate = commands.add_parser("generate", help="regenerate the student files from solutions/")
    generate.add_argument("--check", action="store_true", help="only report stale generated files")
    publish = commands.add_parser("publish", help="build the student release and the LMS autograders into dist/")
    publish.add_argument("--dist", default="dist", help="output folder (default: dist)")
    publish.add_argument("parts", nargs="*", help="only these parts (student, otter, gradescope, nbgrader)")
    args = parser.parse_args(argv)
    try:
        commands_by_name = {"grade": grade_command, "generate": generate_command, "publish": publish_command,
                            "report": report_command}
        return commands_by_name[args.command](args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
