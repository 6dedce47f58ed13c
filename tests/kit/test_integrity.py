"""Cohort integrity: on a cohort of independently written solutions plus disguised copies, the copies rank
first and no honest pair crosses the threshold; the page and the CSV are safe to open and say what they are.

The cohort (tests/kit/integrity_cohort/, sources in its README) is graded once, through the real
`python -m grader grade`, whose class step writes OUT/integrity.html and OUT/integrity.csv.
"""

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.feedback import integrity
from grader.paths import ROOT
from tests.kit.test_integrity_structure import disguise

COHORT = Path(__file__).parent / "integrity_cohort"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def disguised_pairs():
    return {frozenset(pair) for pair in json.loads((COHORT / "pairs.json").read_text())["disguised"]}


@pytest.fixture(scope="module")
def graded_cohort(tmp_path_factory):
    """OUT of the whole cohort, graded once for this module (about a minute on two cores)."""
    folder = tmp_path_factory.mktemp("cohort")
    for path in COHORT.glob("*.py"):
        shutil.copy(path, folder / path.name)
    out = tmp_path_factory.mktemp("cohort_out")
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), "--jobs", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "integrity: 37 submissions" in done.stdout, done.stdout[-2000:]
    return out


@pytest.fixture(scope="module")
def rows(graded_cohort):
    with open(graded_cohort / "integrity.csv", newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


def pair_of(row):
    return frozenset((row["student_a"], row["student_b"]))


def test_the_cohort_is_big_enough_and_its_copies_are_disguised():
    names = {path.stem for path in COHORT.glob("*.py")}
    copies = {copy for _, copy in json.loads((COHORT / "pairs.json").read_text())["disguised"]}
    assert len(names - copies) >= 30 and len(copies) == 6
    for original, copy in json.loads((COHORT / "pairs.json").read_text())["disguised"]:
        first, second = (COHORT / f"{original}.py").read_text(), (COHORT / f"{copy}.py").read_text()
        assert first != second and len(set(first.splitlines()) & set(second.splitlines())) < 0.8 * len(
            set(first.splitlines())), f"{copy} should be a disguised copy of {original}, not a plain one"


def test_every_disguised_pair_ranks_in_the_top_six(rows):
    top = [pair_of(row) for row in rows[:6]]
    assert set(top) == disguised_pairs(), f"top six: {[sorted(pair) for pair in top]}"


def test_no_honest_pair_is_above_the_threshold(rows):
    honest = [row for row in rows if pair_of(row) not in disguised_pairs()]
    copies = [row for row in rows if pair_of(row) in disguised_pairs()]
    highest_honest = max(float(row["score"]) for row in honest)
    lowest_copy = min(float(row["score"]) for row in copies)
    assert highest_honest < integrity.THRESHOLD < lowest_copy, (
        f"highest honest pair {highest_honest:.3f}, lowest disguised pair {lowest_copy:.3f}, "
        f"threshold {integrity.THRESHOLD}")
    assert all(row["flagged"] == "no" for row in honest)
    assert all(row["flagged"] == "yes" for row in copies)


def test_copies_disguised_further_stay_flagged_and_honest_pairs_do_not(graded_cohort):
    """Each copy again, every identifier renamed, equivalent operators swapped, functions and statements
    reordered (test_integrity_structure.disguise: it keeps the meaning, so the copy's graded results stand)."""
    students = integrity.load_students(graded_cohort, [(path.stem, path) for path in COHORT.glob("*.py")])
    by_name = {student.name: student for student in students}
    for index, (_, copy) in enumerate(disguised_pairs_in_order()):  # a seed each: copiers choose their own names
        by_name[copy].code = disguise(by_name[copy].code, seed=11 + index)
    pairs = integrity.compare(students)
    top = {frozenset((pair.a.name, pair.b.name)) for pair in pairs[:6]}
    assert top == disguised_pairs(), [(pair.a.name, pair.b.name, round(pair.score, 3)) for pair in pairs[:8]]
    assert all(pair.flagged == (frozenset((pair.a.name, pair.b.name)) in disguised_pairs()) for pair in pairs)


def disguised_pairs_in_order():
    return json.loads((COHORT / "pairs.json").read_text())["disguised"]


def test_the_page_states_the_expected_false_alarms_and_what_was_discounted(graded_cohort):
    page = (graded_cohort / "integrity.html").read_text(encoding="utf-8")
    assert "False alarms." in page and f"{integrity.expected_false_flags(100):.2g} in a class of 100" in page
    assert "Not counted</b>: code also in the book" in page and "Annotated Transformer" in page
    assert "known mistake: the scores are divided by d_k instead of sqrt(d_k)" in page  # bao_tran / pablo_ortiz


def test_the_csv_ranks_pairs_by_score_with_a_reason_each(rows):
    assert list(rows[0]) == ["student_a", "student_b", "score", "flagged", "reasons"]
    scores = [float(row["score"]) for row in rows]
    assert scores == sorted(scores, reverse=True)
    assert all(row["reasons"] for row in rows)
    assert all((row["flagged"] == "yes") == (float(row["score"]) > integrity.THRESHOLD) for row in rows)


def test_each_signal_is_shown_for_a_disguised_pair(rows):
    by_pair = {pair_of(row): row for row in rows}
    row = by_pair[frozenset(("gustavo_pereira", "hugo_lambert"))]
    assert "code" in row["reasons"] and "behaviour" in row["reasons"]  # shared code, and the shared merge bug


def test_the_page_says_it_is_evidence_not_proof_and_the_report_links_it(graded_cohort):
    page = (graded_cohort / "integrity.html").read_text(encoding="utf-8")
    assert "Evidence, not proof" in page and "<mark>" in page
    assert "<table class='side'>" in page  # the side-by-side view of the matching regions
    assert "href='integrity.html'" in (graded_cohort / "report.html").read_text(encoding="utf-8")


def test_the_page_renders_in_chromium(graded_cohort, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.fail("headless Chromium is missing: `make test` installs Debian's chromium package")
    from PIL import Image

    shot = tmp_path / "integrity.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                    "--window-size=1200,1600", "--user-data-dir=/tmp/kit-chromium-profile",
                    (graded_cohort / "integrity.html").as_uri()], capture_output=True, timeout=120)
    image = Image.open(shot).convert("L")
    dark = sum(count for level, count in enumerate(image.histogram()) if level < 128)
    assert dark > 0.01 * image.width * image.height, "the screenshot is (nearly) blank"


# --- the parts, without grading --------------------------------------------------------------------------------
def student(name, code="", failures=None):
    found = integrity.Student(name, code, failures=failures or {})
    return found


def test_names_are_escaped_on_the_page_and_neutralised_in_the_csv(tmp_path):
    code = "import torch\n\ndef helper_one(x):\n    return torch.cumsum(x * 3, dim=0) + 17 * x.flip(0)\n" * 3
    hostile = [student("<img src=x onerror=alert(1)>", code), student("=HYPERLINK(\"http://x\")", code)]
    pairs = integrity.compare(hostile)
    assert pairs and pairs[0].code > 0
    page = integrity.page(pairs, hostile, tmp_path, 0.1)
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    table = list(csv.reader(integrity.csv_text(pairs).splitlines()))
    assert all(not cell.startswith("=") for row in table for cell in row)


def test_a_shared_wrong_output_counts_and_a_stub_or_a_limit_does_not():
    def results(output, extra=None, score=0.0):
        return {"tests": [{"name": "masking: x", "score": score, "max_score": 2.0, "output": output,
                           "visibility": "after_published", "extra_data": extra or {}}]}

    wrong = integrity.failure_signatures(results("entry [0, 1] is 0.4507, should be 0")).keys()
    assert wrong and wrong == integrity.failure_signatures(results("entry  [0, 1] is 0.4507, should be 0")).keys()
    assert wrong != integrity.failure_signatures(results("entry [0, 1] is 0.3812, should be 0")).keys()
    assert not integrity.failure_signatures(results("causal_mask is not implemented yet"))
    assert not integrity.failure_signatures(results("time limit", {"limit": {"kind": "time"}}))
    assert not integrity.failure_signatures(results("", score=2.0))
    # a public check graded on this submission's own moved inputs: its numbers are no evidence, a known mistake is
    assert not integrity.failure_signatures(results("entry [0, 1] is 0.4507, should be 0", {"inputs": "moved"}))
    known = f"row 2 sums to 1.3\nMost likely cause: {integrity.known_mistakes()[0]}; see the chapter"
    assert integrity.failure_signatures(results(known, {"inputs": "moved"}))


def test_commented_out_code_is_told_from_prose_and_shape_notes():
    found = integrity.unusual_details(integrity.tokens(
        "# weights = weights.masked_fill(mask, 0)\n# (B, nh, T, hs) shapes of the heads\n"
        "# keep the future out of every row\nhead_split = 1\n"), set())
    kinds = sorted(key.split(" ")[0] for key in found)
    assert kinds == ["comment", "comment", "dead", "name"], found


def test_rarity_is_one_for_a_pair_and_falls_as_more_share_it():
    weights = [integrity.rarity(count, 40) for count in (2, 3, 5, 10, 20)]
    assert weights[0] == pytest.approx(1.0) and weights == sorted(weights, reverse=True) and weights[-1] > 0


def test_the_tokenizer_splits_code_as_pythons_own_does():
    import io
    import tokenize

    kept = (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING, tokenize.COMMENT)
    paths = [*COHORT.glob("*.py"), ROOT / "solutions" / "attention.py", *(ROOT / "grader").rglob("*.py")]
    for path in paths:
        code = path.read_text(encoding="utf-8")
        expected = [token.string for token in tokenize.generate_tokens(io.StringIO(code).readline)
                    if token.type in kept]
        assert [text for _, text, _ in integrity.tokens(code)] == expected, path
