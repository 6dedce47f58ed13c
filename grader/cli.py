"""Command line: `python -m grader grade PATH`, `merge`, `generate` and `publish`.

Exit status 0 whenever grading completed, whatever the scores; 2 for bad usage.
"""

import argparse
import os
import sys
import time
from pathlib import Path

from grader.classes import tables
from grader.classes.bulk import grade_class, parse_shard, read_shards, shard, suite_digest, write_manifest
from grader.classes.submissions import UsageError, collect
from grader.feedback import page as feedback
from grader.feedback import report
from grader.judging import results_json as results_io
from grader.check.suite import discover, max_points
from grader.outfiles import write_atomic
from grader.paths import SAMPLE_CLASS
from grader.sandbox.limits import DEFAULTS, Limits, parse_size

DEFAULT_JOBS = 2 * (os.cpu_count() or 1)


def grading_engine(name):
    """The function that grades one file: the kit's sandboxed judge, or stock Otter for comparison."""
    if name == "otter":
        from grader.integrations.otter_engine import grade_with_otter

        return grade_with_otter
    from grader.judging.judge import grade_submission

    return grade_submission


def grade_command(args):
    from grader.judging.judge import Options, zero_result  # imports torch: only the commands that grade pay for it

    tests = discover(kinds=("public",) if args.public_only else ("public", "hidden"))
    maxima = max_points(tests)
    options = Options(args.device, Limits(args.time_limit, args.memory_limit, args.submission_time_limit))
    grade = grading_engine(args.engine)
    try:
        slice_of_class = parse_shard(args.shard) if args.shard else None
    except ValueError as error:
        raise UsageError(str(error)) from None
    collected = collect(args.path)
    try:
        for problem in collected.problems:
            print(f"note: {problem}", file=sys.stderr)
        if not collected.submissions and not collected.rejected:
            raise UsageError(f"no .py or .ipynb submissions found in {args.path}")
        out = Path(args.out)
        started = time.monotonic()
        single = (len(collected.submissions) == 1 and not collected.rejected and not Path(args.path).is_dir()
                  and not args.shard)
        if single:
            name, path = collected.submissions[0]
            graded = [grade(path, name, tests, options)]
            where = Path(args.results) if args.results else out / "results.json"
            results_io.write_results_json(graded[0], maxima, where)
            feedback.write_page_beside(where)
        else:
            # Students whose only file could not be unpacked get a zero row with the reason, not silence.
            rejected = dict(collected.rejected)
            submissions = collected.submissions + [(name, None) for name in rejected]

            def grade_or_reject(path, name, tests, options):
                if path is None:
                    return zero_result(name, None, tests, rejected[name])
                return grade(path, name, tests, options)

            if slice_of_class:
                index, count = slice_of_class
                submissions = shard(submissions, index, count)
                write_manifest(out, index, count, [name for name, _ in submissions])
            settings = {"suite": suite_digest(), "engine": args.engine, "options": vars(options),
                        "public_only": args.public_only}
            graded = grade_class(submissions, tests, options, out, maxima, grade_or_reject, settings,
                                 jobs=args.jobs)
            if not args.shard:  # a shard's class files come from `merge`
                write_class_files(out, graded, maxima, args)
            where = out
        print(tables.score_table(graded, maxima))
        print(f"\n{len(graded)} submission(s) graded in {time.monotonic() - started:.1f}s; results in {where}")
        return 0
    finally:
        collected.cleanup()


def merge_command(args):
    """Combine the OUT folders of `grade --shard i/N` runs into one class: results, grades.csv, LMS files."""
    try:
        found, problems = read_shards(args.shards)
    except (ValueError, OSError) as error:
        raise UsageError(str(error)) from None
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    out = Path(args.out)
    for name, (path, _) in found.items():
        target = out / "results" / f"{name}.json"
        if path.resolve() != target.resolve():
            write_atomic(target, path.read_text(encoding="utf-8"))
    graded = [result for _, result in found.values()]
    maxima = max_points(discover())
    write_class_files(out, graded, maxima, args)
    print(tables.score_table(graded, maxima))
    print(f"\nmerged {len(args.shards)} shard(s), {len(graded)} submission(s), into {out}")
    return 0


def write_class_files(out, graded, maxima, args):
    """Everything written once per class, after all its submissions are graded (grades.csv...)."""
    write_atomic(out / "grades.csv", tables.grades_csv(graded))
    if getattr(args, "roster", None):  # Canvas and Moodle import files, one row per roster student
        from grader.integrations import lms

        for note in lms.write_lms_files(out, graded, maxima, args.roster):
            print(f"note: {note}", file=sys.stderr)
    # OUT/feedback/<name>.html, from OUT/results (so merges get them too)
    feedback.write_pages(out)
    print(report.write_report(out))


def generate_command(args):
    from grader.build.exercises import check_fresh, generate_all

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
    from grader.build.publish import PARTS, publish

    for path in publish(args.dist, args.parts or PARTS):
        print(f"wrote {path}")
    return 0


def seconds_argument(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (e.g. 10 or 2.5)")
    return value


def size_argument(text):
    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def roster_argument(text):
    """--roster: checked before any grading, so a bad roster costs seconds, not a graded class."""
    from grader.integrations import lms

    try:
        lms.read_roster(text)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise argparse.ArgumentTypeError(f"cannot use {text} as a roster: {error}") from None
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    grade = commands.add_parser("grade", help="grade a .py, .ipynb, folder or .zip of submissions")
    grade.add_argument("path", nargs="?", default=str(SAMPLE_CLASS), help="default: the bundled sample class")
    grade.add_argument("--out", default="out", help="folder for results (default: out)")
    grade.add_argument("--results", default=None, help="results.json path for a single submission")
    grade.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                       help=f"submissions graded at once (default {DEFAULT_JOBS}: two per core, so that one's "
                            "worker computes while the other's judge thread checks)")
    grade.add_argument("--time-limit", type=seconds_argument, default=DEFAULTS.step_seconds,
                       help=f"seconds per step (default {DEFAULTS.step_seconds:g})")
    grade.add_argument("--memory-limit", type=size_argument, default=DEFAULTS.memory_bytes,
                       help=f"memory cap per step, e.g. 512MiB (default {DEFAULTS.memory_bytes >> 30}GiB)")
    grade.add_argument("--device", default="cpu", help="cpu or cuda")
    grade.add_argument("--public-only", action="store_true", help="grade with the public tests only")
    grade.add_argument("--roster", type=roster_argument, default=None,
                       help="class list CSV (a Canvas gradebook export, a Moodle or plain roster): also write "
                            "OUT/canvas_grades.csv and OUT/moodle_grades.csv, empty for students who did not submit")
    grade.add_argument("--submission-time-limit", type=seconds_argument, default=DEFAULTS.submission_seconds,
                       help=f"seconds for all steps of one submission (default {DEFAULTS.submission_seconds:g})")
    grade.add_argument("--shard", default=None, help="i/N: grade only the i-th of N slices of the class")
    grade.add_argument("--engine", choices=("kit", "otter"), default="kit",
                       help="kit: the sandboxed grader (default); otter: `otter run` with dist/otter's zip")
    merge = commands.add_parser("merge", help="combine the OUT folders of sharded runs into one class")
    merge.add_argument("shards", nargs="+", help="the OUT folders of the `grade --shard i/N` runs")
    merge.add_argument("--out", default="out", help="folder for the merged results (default: out)")
    merge.add_argument("--roster", type=roster_argument, default=None,
                       help="class list CSV: also write the Canvas and Moodle import files for the whole class")
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
        commands_by_name = {"grade": grade_command, "merge": merge_command, "generate": generate_command,
                            "publish": publish_command, "report": report_command}
        return commands_by_name[args.command](args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
