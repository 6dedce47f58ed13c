"""Cohort integrity on the held-out cohort (tests/kit/integrity_heldout/: 66 honest solutions and 11 disguised
copies, written by another writer who never saw the detector; manifest.json says what each file is).

Graded once through the real `python -m grader grade`. The figures asserted here are the ones measured and
reported in docs/integrity.md: no honest pair flagged, at least 10 of the 12 copy pairs flagged (each copy
with its source, and the two copies of one source with each other), and every flagged copy pair ranked above
every honest pair. The method was calibrated without this cohort; docs/integrity.md says which change came
after its first measurement.

A second cohort (tests/kit/integrity_heldout2/: 40 honest solutions, 8 disguised copies, by a third writer who
never saw the detector) was measured once, blind, after every change to the method, and nothing was changed
after it: no honest pair flagged, 4 of its 9 copy pairs flagged, the highest honest pair ranked 9th.

A third (tests/kit/integrity_heldout3/: 20 honest solutions, several close to the book, and 4 disguised copies,
2026-11-28, by a writer who read only the student release and the chapter texts), measured once with no change to
the method before or after: no honest pair of its 190 flagged; the light copy and the copy sharing its source's
bug flagged; the medium and heavy disguises (0.128, 0.125) rank just above the highest honest pair (0.124), so no
threshold would have caught them without flagging an honest pair.
"""

import csv
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import pytest

from grader.paths import ROOT

pytestmark = pytest.mark.slow(reason='grades the held-out integrity cohort through `python -m grader grade`')

KIT = Path(__file__).parent


@dataclass(frozen=True)
class Cohort:
    folder: Path
    honest: int
    copies: int
    flagged_at_least: int  # copy pairs flagged, as measured
    honest_ranked_after: int  # how many pairs (all of them copy pairs) rank above the highest honest pair

    @property
    def size(self):
        return self.honest + self.copies


COHORTS = [pytest.param(Cohort(KIT / "integrity_heldout", 66, 11, 10, 10), id="heldout"),
           pytest.param(Cohort(KIT / "integrity_heldout2", 40, 8, 4, 8), id="heldout2"),
           pytest.param(Cohort(KIT / "integrity_heldout3", 20, 4, 2, 4), id="heldout3")]


def manifest(cohort):
    return json.loads((cohort.folder / "manifest.json").read_text(encoding="utf-8"))


def copy_pairs(cohort):
    """{frozenset of two names}: each copy with its source, and copies of one source with each other."""
    source = {name.split("/")[-1][:-3]: entry["derived_from"].split("/")[-1][:-3]
              for name, entry in manifest(cohort)["copies"].items()}
    pairs = {frozenset((copy, original)) for copy, original in source.items()}
    return pairs | {frozenset((a, b)) for a, b in combinations(source, 2) if source[a] == source[b]}


@pytest.fixture(scope="module", params=COHORTS)
def cohort(request):
    return request.param


@pytest.fixture(scope="module")
def rows(cohort, tmp_path_factory):
    folder = tmp_path_factory.mktemp("heldout")
    for path in [*(cohort.folder / "honest").glob("*.py"), *(cohort.folder / "copies").glob("*.py")]:
        shutil.copy(path, folder / path.name)
    out = tmp_path_factory.mktemp("heldout_out")
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), "--jobs", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"integrity: {cohort.size} submissions" in done.stdout, done.stdout[-2000:]
    with open(out / "integrity.csv", newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


def pair_of(row):
    return frozenset((row["student_a"], row["student_b"]))


def test_the_heldout_cohort_is_what_its_manifest_says(cohort):
    entries = manifest(cohort)
    assert len(entries["honest"]) == cohort.honest and len(entries["copies"]) == cohort.copies
    names = {name.split("/")[-1] for name in entries["honest"]} | {name.split("/")[-1] for name in entries["copies"]}
    on_disk = {path.name for kind in ("honest", "copies") for path in (cohort.folder / kind).glob("*.py")}
    assert on_disk == names


def test_no_honest_pair_of_the_heldout_cohort_is_flagged(cohort, rows):
    flagged = [(row["student_a"], row["student_b"], row["score"], row["reasons"]) for row in rows
               if row["flagged"] == "yes" and pair_of(row) not in copy_pairs(cohort)]
    assert not flagged


def test_the_heldout_copies_are_flagged_and_rank_above_every_honest_pair(cohort, rows):
    copies = copy_pairs(cohort)
    flagged = [row for row in rows if row["flagged"] == "yes"]
    assert len(flagged) >= cohort.flagged_at_least and all(pair_of(row) in copies for row in flagged)
    first_honest = next(index for index, row in enumerate(rows) if pair_of(row) not in copies)
    assert first_honest >= max(len(flagged), cohort.honest_ranked_after), \
        [(row["student_a"], row["student_b"], row["score"]) for row in rows[:14]]
