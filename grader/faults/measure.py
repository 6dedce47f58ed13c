"""How often the feedback names the right cause: `make diagnose-report` (`python -m grader.faults.measure`).

Grades every bug of the catalogue and every correct variant through the real
sandboxed judge, then compares the cause the feedback names for the bug's step
(grader.feedback.diagnosis) with the cause the catalogue expects (Bug.diagnosis).
"""

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader.faults.bugs import BUGS
from grader.faults.variants import VARIANTS
from grader.feedback.diagnosis import diagnose

TARGET = 0.9


def named_cause(result, step):
    """The cause the feedback names for `step` of a graded submission, or None."""
    found = diagnose(result.tests).get(step)
    return found["cause"] if found else None


def diagnosis_rate(graded_bugs):
    """(share of bugs whose step names the expected cause, [(bug, named cause)] of the misses)."""
    misses = [(bug, named_cause(graded_bugs[bug.id], bug.step)) for bug in BUGS]
    misses = [(bug, named) for bug, named in misses if named != bug.diagnosis]
    return 1 - len(misses) / len(BUGS), misses


def causes_named_for_variants(graded_variants):
    """{variant id: {step: cause}} for every correct variant whose feedback names any cause."""
    named = {}
    for variant in VARIANTS:
        causes = {step: found["cause"] for step, found in diagnose(graded_variants[variant.id].tests).items()
                  if found}
        if causes:
            named[variant.id] = causes
    return named


def grade_all(mutations, folder):
    from grader.build.exercises import clean_solution
    from grader.judging.judge import Options, grade_submission
    from grader.check.suite import discover

    suite, clean = discover(), clean_solution()

    def one(mutation):
        path = Path(folder) / f"{mutation.id}.py"
        path.write_text(mutation.apply(clean))
        return mutation.id, grade_submission(path, mutation.id, suite, Options())

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, mutations))


def main():
    import tempfile

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        graded_bugs = grade_all(BUGS, folder)
        graded_variants = grade_all(VARIANTS, folder)
    rate, misses = diagnosis_rate(graded_bugs)
    print(f"diagnosis: the right cause is named for {len(BUGS) - len(misses)} of {len(BUGS)} catalogue bugs "
          f"({rate:.1%}; target {TARGET:.0%})")
    for bug, named in misses:
        print(f"  miss  {bug.id} [{bug.step}]: expected {bug.diagnosis}, feedback names {named or 'no cause'}")
    wrong = causes_named_for_variants(graded_variants)
    print(f"correct variants whose feedback names a cause: {len(wrong)} of {len(VARIANTS)}")
    for variant_id, causes in wrong.items():
        print(f"  wrong {variant_id}: {causes}")
    print(f"({time.monotonic() - started:.0f} s)")
    return 0 if rate >= TARGET and not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
