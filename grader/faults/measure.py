"""How well the feedback diagnoses the catalogue: `make diagnose-report` (`python -m grader.faults.measure`).

Grades every fault of the catalogue and every correct variant through the real
sandboxed judge, several submissions at a time, then compares the cause the
feedback names for the fault's step (grader.feedback.diagnosis) with the cause
the catalogue expects (Bug.diagnosis). Figures for the tuning split and the
held-out split (grader.faults.split) are printed apart:

  caught               the fault's step lost points
  named specifically   the feedback names the expected cause
  wrong cause          the feedback names another cause (worse than none)
  variants with a cause  correct variants whose feedback names any cause (must be 0)

The development faults (added after the split was drawn, outside the catalogue)
are reported apart.
"""

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from grader.chapter import STEP_KEYS
from grader.faults.bugs import BUGS, DEVELOPMENT_BUGS
from grader.faults.split import split_of
from grader.faults.variants import VARIANTS
from grader.faults.mutation import Bug, Mutation
from grader.feedback.diagnosis import diagnose
from grader.results import SubmissionResult

Graded = dict[str, SubmissionResult]  # mutation id -> its graded result (grade_all)

TARGET = 0.9  # share of all catalogue faults whose feedback names the expected cause (tests/kit/test_diagnosis.py)
HELD_OUT_TARGETS = {"caught": 0.95, "named": 0.85}  # and no wrong cause, no cause for a variant


def named_cause(result: SubmissionResult, step: str) -> str | None:
    """The cause the feedback names for `step` of a graded submission, or None."""
    found = diagnose(result.tests).get(step)
    return found["cause"] if found else None


def diagnosis_rate(graded_bugs: Graded, bugs: Iterable[Bug] | None = None) -> tuple[float, list[tuple[Bug, str | None]]]:
    """(share of bugs whose step names the expected cause, [(bug, named cause)] of the misses)."""
    bugs = [bug for bug in (BUGS if bugs is None else bugs) if bug.id in graded_bugs]
    misses = [(bug, named_cause(graded_bugs[bug.id], bug.step)) for bug in bugs]
    misses = [(bug, named) for bug, named in misses if named != bug.diagnosis]
    return (1 - len(misses) / len(bugs) if bugs else 1.0), misses


def causes_named_for_variants(graded_variants: Graded, variants: Iterable[Mutation] | None = None) -> dict[str, dict[str, str]]:
    """{variant id: {step: cause}} for every correct variant whose feedback names any cause."""
    named = {}
    for variant in (VARIANTS if variants is None else variants):
        if variant.id not in graded_variants:
            continue
        causes = {step: found["cause"] for step, found in diagnose(graded_variants[variant.id].tests).items()
                  if found}
        if causes:
            named[variant.id] = causes
    return named


@dataclass
class Tally:
    """The figures of one split."""
    faults: list[Bug] = field(default_factory=list)
    caught: list[Bug] = field(default_factory=list)
    named: list[Bug] = field(default_factory=list)
    wrong: list[tuple[Bug, str]] = field(default_factory=list)  # (bug, the cause named)
    unnamed: list[Bug] = field(default_factory=list)  # caught, no cause named

    def share(self, items: list[Any]) -> float:
        return len(items) / len(self.faults) if self.faults else 1.0


def tally(graded_bugs: Graded, bugs: Iterable[Bug], maxima: dict[str, float]) -> Tally:
    found = Tally()
    for bug in bugs:
        result = graded_bugs[bug.id]
        found.faults.append(bug)
        if result.step_scores()[bug.step] < maxima[bug.step] - 1e-9:
            found.caught.append(bug)
        named = named_cause(result, bug.step)
        if named == bug.diagnosis:
            found.named.append(bug)
        elif named:
            found.wrong.append((bug, named))
        elif bug in found.caught:
            found.unnamed.append(bug)
    return found


def grade_all(mutations: Iterable[Mutation], folder: str | Path, jobs: int | None = None) -> Graded:
    """{id: SubmissionResult} for every mutation, `jobs` submissions at a time (default: one per core)."""
    from grader.markers import clean_solution
    from grader.check.suite import discover
    from grader.judging.judge import Options, grade_submission

    suite, clean = discover(), clean_solution()

    def one(mutation):
        path = Path(folder) / f"{mutation.id}.py"
        path.write_text(mutation.apply(clean))
        return mutation.id, grade_submission(path, mutation.id, suite, Options())

    with ThreadPoolExecutor(max_workers=jobs or max(1, os.cpu_count() or 1)) as pool:
        return dict(pool.map(one, mutations))


def pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "0/0"


def print_split(name: str, found: Tally, stream: TextIO) -> None:
    total = len(found.faults)
    print(f"{name}: {total} faults | caught {pct(len(found.caught), total)} | named specifically "
          f"{pct(len(found.named), total)} | wrong cause {len(found.wrong)}", file=stream)
    for key in STEP_KEYS:
        step = [bug for bug in found.faults if bug.step == key]
        if step:
            named = sum(bug.step == key for bug in found.named)
            caught = sum(bug.step == key for bug in found.caught)
            wrong = sum(bug.step == key for bug, _ in found.wrong)
            print(f"    {key:<20} {len(step):>3} faults: caught {caught}, named {named}, wrong {wrong}", file=stream)
    for bug, cause in found.wrong:
        print(f"  wrong   {bug.id} [{bug.step}]: expected {bug.diagnosis}, feedback names {cause}", file=stream)
    for bug in found.unnamed:
        print(f"  unnamed {bug.id} [{bug.step}]: expected {bug.diagnosis}, no cause named", file=stream)
    for bug in found.faults:
        if bug not in found.caught:
            print(f"  missed  {bug.id} [{bug.step}]: not caught", file=stream)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m grader.faults.measure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("tuning", "held-out", "all"), default="all",
                        help="which faults to grade (default: all, each split reported apart)")
    parser.add_argument("--jobs", type=int, default=None, help="submissions graded at a time (default: one per core)")
    parser.add_argument("--only", nargs="*", default=None, help="grade only these fault or variant ids")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, stream: TextIO | None = None) -> int:
    from grader.check.suite import discover, max_points

    stream = stream or sys.stdout
    args = parse(argv)
    bugs = [bug for bug in BUGS if args.split == "all" or split_of(bug.id) == args.split]
    development = list(DEVELOPMENT_BUGS) if args.split in ("all", "tuning") else []
    variants = list(VARIANTS)
    if args.only is not None:
        bugs = [bug for bug in bugs if bug.id in args.only]
        development = [bug for bug in development if bug.id in args.only]
        variants = [variant for variant in variants if variant.id in args.only]
    maxima = max_points(discover())
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        graded = grade_all(bugs + development + variants, folder, args.jobs)
    seconds = time.monotonic() - started
    ok = True
    for name in ("tuning", "held-out", "development"):
        chosen = development if name == "development" else [bug for bug in bugs if split_of(bug.id) == name]
        if chosen:
            found = tally(graded, chosen, maxima)
            print_split(name, found, stream)
            if name == "held-out":
                ok &= (found.share(found.caught) >= HELD_OUT_TARGETS["caught"]
                       and found.share(found.named) >= HELD_OUT_TARGETS["named"] and not found.wrong)
    if bugs:
        rate, _ = diagnosis_rate(graded, bugs)
        print(f"all faults: the expected cause is named for {rate:.1%} (target {TARGET:.0%})", file=stream)
        ok &= rate >= TARGET
    wrong = causes_named_for_variants(graded, variants)
    print(f"correct variants with a cause: {len(wrong)} of {len(variants)}", file=stream)
    for variant_id, causes in wrong.items():
        print(f"  variant {variant_id}: {causes}", file=stream)
    print(f"({len(bugs) + len(development) + len(variants)} submissions graded in {seconds:.0f} s, "
          f"{args.jobs or os.cpu_count()} at a time)", file=stream)
    return 0 if ok and not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
