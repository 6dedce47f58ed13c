"""Cohort integrity on the held-out cohort (tests/kit/integrity_heldout/: 66 honest solutions and 11 disguised
copies, written by another writer who never saw the detector; manifest.json says what each file is).

Graded once through the real `python -m grader grade`. The figures asserted here are the ones measured and
reported in docs/integrity.md: no honest pair flagged, at least 10 of the 12 copy pairs flagged (each copy
with its source, and the two copies of one source with each other), and every flagged copy pair ranked above
every honest pair. The method was calibrated without this cohort; docs/integrity.md says which change came
after its first measurement.
"""

import csv
import json
import shutil
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import pytest

from grader.paths import ROOT

pytestmark = pytest.mark.slow(reason='grades the held-out integrity cohort through `python -m grader grade`')

HELDOUT = Path(__file__).parent / "integrity_heldout"


def manifest():
    return json.loads((HELDOUT / "manifest.json").read_text(encoding="utf-8"))


def copy_pairs():
    """{frozenset of two names}: each copy with its source, and copies of one source with each other."""
    source = {name[:-3]: entry["derived_from"].split("/")[-1][:-3] for name, entry in manifest()["copies"].items()}
    pairs = {frozenset((copy, original)) for copy, original in source.items()}
    return pairs | {frozenset((a, b)) for a, b in combinations(source, 2) if source[a] == source[b]}


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    folder = tmp_path_factory.mktemp("heldout")
    for path in [*(HELDOUT / "honest").glob("*.py"), *(HELDOUT / "copies").glob("*.py")]:
        shutil.copy(path, folder / path.name)
    out = tmp_path_factory.mktemp("heldout_out")
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), "--jobs", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "integrity: 77 submissions" in done.stdout, done.stdout[-2000:]
    with open(out / "integrity.csv", newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


def pair_of(row):
    return frozenset((row["student_a"], row["student_b"]))


def test_the_heldout_cohort_is_what_its_manifest_says():
    entries = manifest()
    assert len(entries["honest"]) == 66 and len(entries["copies"]) == 11
    assert {path.name for path in (HELDOUT / "honest").glob("*.py")} == set(entries["honest"])
    assert {path.name for path in (HELDOUT / "copies").glob("*.py")} == set(entries["copies"])


def test_no_honest_pair_of_the_heldout_cohort_is_flagged(rows):
    flagged = [(row["student_a"], row["student_b"], row["score"], row["reasons"]) for row in rows
               if row["flagged"] == "yes" and pair_of(row) not in copy_pairs()]
    assert not flagged


def test_the_heldout_copies_are_flagged_and_rank_above_every_honest_pair(rows):
    copies = copy_pairs()
    flagged = [row for row in rows if row["flagged"] == "yes"]
    assert len(flagged) >= 10 and all(pair_of(row) in copies for row in flagged)
    first_honest = next(index for index, row in enumerate(rows) if pair_of(row) not in copies)
    assert first_honest >= len(flagged), [(row["student_a"], row["student_b"], row["score"]) for row in rows[:14]]
