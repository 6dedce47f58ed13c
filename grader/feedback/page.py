"""Feedback that teaches: per step, what passed, what failed, the most likely cause, and pictures.

Everything here works from a submission's result as results.json has it (a
grader.results.SubmissionResult, read back with `from_json`), so feedback can be
rebuilt after grading, resuming or merging shards. Two renderings of the same content:

* `markdown(result)`: the Gradescope `output`. It is visible at once, so it shows
  only what the visible (public) checks found; hidden checks carry their own
  output, shown when grades are published.
* `html_page(result)`: a self-contained page (heatmaps drawn as inline SVG)
  with every check, for the instructor to hand out: the student's attention
  weights beside the pattern they should have, with the cells that leak the
  future and the rows that do not sum to one marked.

The pictures show only the student's own numbers and the causal *pattern*,
never a hidden expected value.
"""

import hashlib
import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

from grader.check.loader import left_out_note
from grader.feedback import diagnosis
from grader.outfiles import write_atomic
from grader.text import html as esc
from grader.feedback import svg
from grader.chapter import STEPS, Step
from grader.results import SubmissionResult, TestResult, as_result

MAX_PICTURES_PER_STEP = 2


# --- what results.json carries ----------------------------------------------------------------------------------
def test_extra_data(test: TestResult) -> dict[str, Any]:
    """Per-test `extra_data` for results.json: the cause this failure points to and its picture, the limit it
    hit, and "inputs": "moved" for a public check graded on moved inputs (grader.check.public_inputs)."""
    if test.score >= test.max_score:
        return {}
    record = diagnosis.as_record(test)
    cause, strength = diagnosis.evidence_of(record)
    extra: dict[str, Any] = {}
    if cause:
        extra.update(cause=cause, kind=record["details"].get("kind") or strength_kind(strength))
    picture = record["details"].get("picture")
    if picture:
        extra["picture"] = picture
    if test.limit:
        extra["limit"] = test.limit.value
    if record["details"].get("inputs"):
        extra["inputs"] = record["details"]["inputs"]  # "moved": see grader.check.public_inputs
    return extra


def strength_kind(strength: int) -> str:
    return next(kind for kind, value in diagnosis.STRENGTH.items() if value == strength)


def annotations(tests: list[TestResult]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """What results.json adds to `extra_data`: the diagnosis of each step that lost points, the limits hit."""
    found = diagnosis.diagnose(tests)
    limits, seen = [], set()
    for test in tests:
        kind = test.extra_data.get("limit")
        if kind and (test.step, kind) not in seen:
            seen.add((test.step, kind))
            limits.append({"step": test.step, "kind": kind, "message": test.output.split("\n", 1)[0][:300]})
    return found, limits


def steps_of(result: SubmissionResult) -> list[tuple[Step, list[TestResult], float, float]]:
    """[(step, [tests], score, max)] in chapter order."""
    rows = []
    for step in STEPS:
        tests = result.tests_of(step.key)
        score = sum(t.score for t in tests)
        maximum = result.max_steps.get(step.key, sum(t.max_score for t in tests))
        rows.append((step, tests, score, maximum))
    return rows


NOTES_TITLE = "Lines of your file the grader did not run (they cost no points):"


def loading_problems(problems: Iterable[Any]) -> tuple[list[str], list[str]]:
    """(errors, notes): the loading problems that cost points, and the IPython lines only left out."""
    errors: list[str] = []
    notes: list[str] = []
    note = False
    for problem in map(str, problems or []):
        if not problem.startswith("... and "):  # `... and N more` goes with the lines it follows
            note = left_out_note(problem)
        (notes if note else errors).append(problem)
    return errors, notes


# --- Markdown (Gradescope output) -------------------------------------------------------------------------------
def markdown(result: SubmissionResult | dict) -> str:
    """The visible part of the feedback, as Markdown: what the public checks found, per step."""
    result = as_result(result)
    lines = []
    errors, notes = loading_problems(result.problems)
    if errors:
        lines += ["**Problems found while loading your file:**", ""] + [f"- {md(p)}" for p in errors] + [""]
    if notes:
        lines += [f"**{NOTES_TITLE}**", ""] + [f"- {md(p)}" for p in notes] + [""]
    for step, tests, _, _ in steps_of(result):
        visible = [t for t in tests if t.visibility == "visible"]
        hidden = len(tests) - len(visible)
        if not tests:
            continue
        lost = [t for t in visible if not t.passed]
        got = sum(t.score for t in visible)
        out_of = sum(t.max_score for t in visible)
        mark = "✅" if not lost else "❌"
        lines.append(f"### {mark} {step.number}. {step.title}: {got:g}/{out_of:g} on the visible checks")
        lines.append("")
        passed = [t for t in visible if t.passed]
        if passed:
            lines.append(f"Passed: {', '.join(md(t.short_name) for t in passed)}.")
            lines.append("")
        for test in lost:
            lines.append(f"- **{md(test.short_name)}**: {md(test.output)}")
        if lost:
            lines.append("")
            lines += hint_markdown(diagnosis.diagnose_step([diagnosis.as_record(t) for t in visible]), lost)
        if hidden:
            lines.append(f"_{hidden} hidden check(s) of this step: their results appear when grades are published._")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def hint_markdown(found: dict[str, Any] | None, lost: list[TestResult]) -> list[str]:
    if found:
        return [f"**Most likely cause:** {md(found['title'])}.", "",
                f"*Evidence:* {md(found['evidence'])}", "", f"*What to do:* {md(found['fix'])}.", ""]
    return ["**No single known mistake explains this.** The checks that failed are listed above; "
            "each says what differed and what to check.", ""]


def md(text: object) -> str:
    """Text safe inside Markdown: no stray emphasis, code or HTML."""
    text = str(text).replace("\n", " ")
    for char in "\\`*_[]<>|#":
        text = text.replace(char, "\\" + char)
    return text


# --- pictures -----------------------------------------------------------------------------------------------------
LEAK, BAD_ROW, RIGHT = "#d62728", "#ff7f0e", "#1b5e20"
GREENS = ("#f7fcf5", "#98d594")  # the expected pattern: "0" cells, "≥0" cells


def as_number(value: Any) -> float:
    """A weight from results.json as a float (NaN for None or anything that is not a number)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def weight_text(value: float) -> str:
    """A weight short enough for its cell: ".23", "-.05", "12", "3e4", "NaN", "inf"."""
    if math.isnan(value) or math.isinf(value):
        return "NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if abs(value) < 9.995:
        return f"{value:.2f}".replace("0.", ".", 1)
    return f"{value:.0f}" if abs(value) < 999.5 else power_text(value)


def sum_text(value: object) -> str:
    """A row or column sum: "Σ=0.18", "Σ=NaN", "Σ=2e5"."""
    value = as_number(value)
    if not math.isfinite(value):
        return "Σ=NaN" if math.isnan(value) else f"Σ={'' if value > 0 else '-'}inf"
    return f"Σ={value:.2f}" if abs(value) < 999.5 else f"Σ={power_text(value)}"


def power_text(value: float) -> str:
    """A big number in three or four characters: 7e3, 1e30, -2e5."""
    mantissa, _, exponent = f"{value:.0e}".partition("e")
    return f"{mantissa}e{int(exponent)}"


def heatmap_svg(picture: dict[str, Any]) -> str:
    """The student's attention weights beside the expected pattern, as inline SVG: each weight written in
    its cell, weights on future tokens in red squares, rows that do not sum to one outlined in dashed
    orange with their sums in red, column sums under the key positions."""
    rows = [list(row) if isinstance(row, (list, tuple)) else [] for row in picture.get("values") or []]
    n, m = len(rows), max((len(row) for row in rows), default=0)
    values = [[as_number(row[j]) if j < len(row) else math.nan for j in range(m)] for row in rows]
    causal = bool(picture.get("causal", False))
    finite = [abs(v) for row in values for v in row if math.isfinite(v)]
    top = max([1.0] + finite)
    cell = 44 if max(n, m) <= 8 else 32
    size = 12 if cell == 44 else 10.5
    columns = picture.get("column_sums") or []
    bad = {i for i in picture.get("bad_rows") or [] if isinstance(i, int)}
    sums = picture.get("row_sums") or []

    # Left panel: y label, row numbers, the grid, the row sums.
    grid_x, grid_y = 58, 36
    mine_title = "your attention weights"
    mine_width = max(grid_x + m * cell + 70, svg.text_width(mine_title, 13, bold=True) + 20)
    # Right panel: the same frame around the expected pattern.
    other_x = mine_width + 20
    other_title = "expected pattern" + (" (causal: the future is 0)" if causal else "")
    other_grid_x = other_x + grid_x
    other_width = max(grid_x + m * cell + 50, svg.text_width(other_title, 13, bold=True) + 10)
    under = grid_y + n * cell + 12  # key positions, then column sums, then the axis label
    label_y = max(under + (32 if columns else 20), grid_y + 100)  # below the rotated "query token i"
    width, height = other_x + other_width, label_y + 14

    cells: list[list[tuple[str, str, str, str]]] = []
    for i, row in enumerate(values):
        cells.append([])
        for j, value in enumerate(row):
            fill = svg.NAN_FILL if not math.isfinite(value) else svg.shade(value / top)
            ink = "#ffffff" if svg.is_dark(fill) else svg.INK
            cells[-1].append((fill, weight_text(value), ink, f"weight of key {j} for query {i}: "
                              + ("NaN" if math.isnan(value) else f"{value:.6g}")))
    pattern = [[(GREENS[0], "0", "#777777", "expected 0: a future position") if causal and j > i else
                (GREENS[1], "≥0", RIGHT, None) for j in range(m)] for i in range(n)]
    parts = [svg.text(8, 14, mine_title, size=13, bold=True),
             svg.text(other_x + 8, 14, other_title, size=13, bold=True),
             svg.heatmap(grid_x, grid_y, cell, cells, size=size),
             svg.heatmap(other_grid_x, grid_y, cell, pattern, size=size)]
    for i, j in (pair for pair in picture.get("leaks") or [] if valid_cell(pair, n, m)):
        parts.append(svg.rect(grid_x + j * cell + 4, grid_y + i * cell + 4, cell - 8, cell - 8, stroke=LEAK,
                              stroke_width=2.5, title=f"query {i} gives weight to the future key {j}"))
    for i in sorted(i for i in bad if 0 <= i < n):
        parts.append(svg.rect(grid_x + 1.5, grid_y + i * cell + 1.5, m * cell - 3, cell - 3, stroke=BAD_ROW,
                              stroke_width=2.5, dash="7 4", title=f"row {i} does not sum to one"))
    for i in range(n):
        middle = grid_y + (i + 0.5) * cell
        for left in (grid_x, other_grid_x):
            parts.append(svg.text(left - 6, middle, i, size=size, anchor="end", colour=svg.MUTED))
        if i < len(sums):
            parts.append(svg.text(grid_x + m * cell + 6, middle, sum_text(sums[i]), size=size,
                                  colour=LEAK if i in bad else "#333333", bold=i in bad))
        parts.append(svg.text(other_grid_x + m * cell + 6, middle, "Σ=1", size=size, colour=RIGHT))
    for j in range(m):
        for left in (grid_x, other_grid_x):
            parts.append(svg.text(left + (j + 0.5) * cell, under, j, size=size, anchor="middle",
                                  colour=svg.MUTED))
        if j < len(columns):  # a softmax over the wrong axis makes every column sum 1
            parts.append(svg.text(grid_x + (j + 0.5) * cell, under + 15, sum_text(columns[j])[2:],
                                  size=size - 1, anchor="middle", colour="#333333"))
    if columns:
        parts.append(svg.text(grid_x - 6, under + 15, "Σ", size=size - 1, anchor="end", colour="#333333"))
    mine_label = "key position j (Σ: column sum)" if columns else "key position j"
    for left, label in ((grid_x, mine_label), (other_grid_x, "key position j")):
        middle = max(left + m * cell / 2, left - grid_x + 8 + svg.text_width(label, 12) / 2)
        parts.append(svg.text(middle, label_y, label, size=12, anchor="middle"))
        parts.append(svg.text(left - 42, grid_y + max(n * cell, 90) / 2, "query token i", size=12,
                              anchor="middle", rotate=-90))
    return svg.document(width, height, parts, f"heatmap: {picture.get('what', 'attention weights')}")


def valid_cell(pair: object, n: int, m: int) -> bool:
    return (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(k, int) for k in pair)
            and 0 <= pair[0] < n and 0 <= pair[1] < m)


# --- HTML page ----------------------------------------------------------------------------------------------------
STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:62rem;color:#222;
line-height:1.45;padding:0 1rem}
h1{margin-bottom:.2rem} .sub{color:#666;margin-top:0}
.step{border:1px solid #ddd;border-radius:8px;margin:1.2rem 0;padding:.6rem 1rem}
.step.ok{border-left:6px solid #2e7d32} .step.bad{border-left:6px solid #c62828}
.step h2{font-size:1.1rem;margin:.3rem 0} .score{float:right;font-weight:600}
ul.checks{list-style:none;padding-left:0} ul.checks li{margin:.35rem 0}
.pass::before{content:"✔ ";color:#2e7d32} .fail::before{content:"✘ ";color:#c62828}
.msg{display:block;color:#444;font-size:.9rem;margin-left:1.3rem;white-space:pre-wrap}
.tag{font-size:.75rem;color:#555;background:#eee;border-radius:4px;padding:0 .3rem;margin-left:.3rem}
.hint{background:#fff8e1;border:1px solid #ffcc80;border-radius:6px;padding:.6rem .8rem;margin:.6rem 0}
.hint.none{background:#f5f5f5;border-color:#ddd}
.hint b{color:#e65100} figure{margin:.8rem 0} figcaption{font-size:.85rem;color:#555}
.problems{background:#ffebee;border:1px solid #ef9a9a;border-radius:6px;padding:.5rem 1rem}
.notes{background:#f5f5f5;border:1px solid #ccc;border-radius:6px;padding:.5rem 1rem}
.legend{font-size:.85rem;color:#555}
"""


def html_page(result: SubmissionResult | dict, final: dict[str, Any] | None = None) -> str:
    """A self-contained feedback page for one submission (every check, hints, heatmaps). `final`: its entry of
    OUT/class.json's final scores, whose overrides (the instructor's changes) the page states beside the score."""
    result = as_result(result)
    name = result.name or "submission"
    found = result.diagnosis
    if found is None:
        found = diagnosis.diagnose(result.tests)
    total = sum(maximum for _, _, _, maximum in steps_of(result))
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Feedback: {esc(name)}</title>",
             f"<style>{STYLE}</style></head><body>",
             f"<h1>Feedback for {esc(name)}</h1>",
             f"<p class='sub'>Score {result.score:g} / {total:g}. For each step: the checks that passed "
             "and failed, the most likely cause of a failure, and where it helps a picture of your attention "
             "weights. This page includes the hidden checks.</p>"]
    final = final or {}
    changed = final.get("overrides") or []
    if changed:  # the grade the LMS holds is the instructor's: the page must not show another one alone
        parts.append(MARK.format(_override_mark(final)))
        parts.append(f"<div class='notes'><b>Your grade: {float(final['total']):g} / {total:g}</b>, changed by your "
                     "instructor from the score above: <ul>" + "".join(
                         f"<li>{esc(str(item.get('step')))} set to {float(item.get('points', 0)):g}"
                         + (f": {esc(str(item['reason']))}" if item.get("reason") else "") + "</li>"
                         for item in changed) + "</ul></div>")
    errors, notes = loading_problems(result.problems)
    if errors:
        parts.append("<div class='problems'><b>Problems found while loading your file:</b><ul>"
                     + "".join(f"<li>{esc(p)}</li>" for p in errors) + "</ul></div>")
    if notes:
        parts.append(f"<div class='notes'><b>{esc(NOTES_TITLE)}</b><ul>"
                     + "".join(f"<li>{esc(p)}</li>" for p in notes) + "</ul></div>")
    for step, tests, score, maximum in steps_of(result):
        parts.append(step_html(step, tests, score, maximum, found.get(step.key)))
    parts.append("</body></html>")
    return "\n".join(parts)


def step_html(step: Step, tests: list[TestResult], score: float, maximum: float, found: dict[str, Any] | None) -> str:
    lost = [t for t in tests if not t.passed]
    items = []
    for test in tests:
        tag = "" if test.visibility == "visible" else "<span class='tag'>hidden</span>"
        if not test.passed:
            items.append(f"<li class='fail'>{esc(test.short_name)}{tag}"
                         f"<span class='msg'>{esc(test.output)}</span></li>")
        else:
            items.append(f"<li class='pass'>{esc(test.short_name)}{tag}</li>")
    parts = [f"<section class='step {'bad' if lost else 'ok'}' id='step-{step.key}'>",
             f"<h2>{step.number}. {esc(step.title)} <span class='score'>{score:g} / {maximum:g}</span></h2>"]
    if lost:
        if found:
            parts.append(f"<div class='hint'><b>Most likely cause:</b> {esc(found['title'])}.<br>"
                         f"<i>Evidence:</i> {esc(found['evidence'])}<br><i>What to do:</i> {esc(found['fix'])}."
                         "</div>")
        else:
            parts.append("<div class='hint none'><b>No single known mistake explains this.</b> The failed checks "
                         "below say what differed and what to check.</div>")
    parts.append("<ul class='checks'>" + "".join(items) + "</ul>")
    shown = 0
    for test in lost:
        picture = test.extra_data.get("picture")
        if picture and shown < MAX_PICTURES_PER_STEP:
            shown += 1
            what = picture.get("what", "attention weights")
            parts.append(f"<figure>{heatmap_svg(picture)}<figcaption>{esc(what)} ({esc(test.short_name)}). "
                         "<span class='legend'>Red squares: weight given to a future token. Dashed orange rows: "
                         "rows that do not sum to one. Right: the pattern every row should follow.</span>"
                         "</figcaption></figure>")
    parts.append("</section>")
    return "\n".join(parts)


def write_page(result: SubmissionResult | dict, path: Path | str, final: dict[str, Any] | None = None) -> Path:
    """Write the feedback page of one result (or results.json dict) to `path` (`final`: see html_page)."""
    write_atomic(Path(path), html_page(result, final))
    return Path(path)


def finish(result: SubmissionResult, maxima: dict[str, float]) -> SubmissionResult:
    """`result` as results.json has it (a copy; `maxima` the steps' points): per-test causes and pictures
    (each test's `extra_data`, also its `details`, as when read back), the step diagnoses and limits, the
    cause named in the output of the failing test that shows it, the Markdown `output`."""
    tests = []
    for test in result.tests:
        extra = test_extra_data(test)
        tests.append(replace(test, details=dict(extra), extra_data=extra))
    done = replace(result, tests=tests, problems=list(result.problems), max_steps=maxima)
    done.diagnosis, done.limits = annotations(tests)
    for found in done.diagnosis.values():
        witness = next((t for t in tests if found and t.name == found["test"]), None)
        if witness and found["title"] not in witness.output:
            witness.output += f"\nMost likely cause: {found['title']}; {found['fix']}."
    done.output = markdown(done)
    done.output_format = "md"
    return done


def write_page_beside(results_path: Path | str) -> Path:
    """The feedback page of one graded file, next to its results.json (as feedback.html)."""
    path = Path(results_path)
    return write_page(SubmissionResult.from_json(path.read_text(encoding="utf-8")), path.with_name("feedback.html"))


def write_pages(out: Path | str, force: bool = False) -> int:
    """OUT/feedback/<name>.html for every OUT/results/<name>.json, skipping pages newer than their
    results (a resumed run redraws only what was regraded) unless `force`; returns how many were written.
    Pictures are plain SVG strings, so a class of 200 takes well under a second in this one process."""
    finals = _finals(out)
    written = 0
    for path in sorted((Path(out) / "results").glob("*.json")):
        page = Path(out) / "feedback" / f"{path.stem}.html"
        final = finals.get(path.stem)
        # (overrides live in class.json: a page that states other ones than it, or none, is drawn again)
        if (force or not page.is_file() or page.stat().st_mtime < path.stat().st_mtime
                or _stated(page) != _override_mark(final)):
            written += _write_page_from(path, page, final)
    return written


def _finals(out: Path | str) -> dict[str, Any]:
    """{submission: its final scores} from OUT/class.json ({} without one). Read here, not through
    class_view.read_class: class_view imports this module, and the kit allows no import circle (test_layout)."""
    try:
        data = json.loads((Path(out) / "class.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    final = data.get("final") if isinstance(data, dict) else None
    return final if isinstance(final, dict) else {}


MARK = "<!-- overrides: {} -->"


def _override_mark(final: Any) -> str:
    """A short digest of the overrides a page states (its final entry's), "" for none."""
    changed = final.get("overrides") if isinstance(final, dict) else None
    if not changed:
        return ""
    return hashlib.sha256(json.dumps([changed, final.get("total")], sort_keys=True).encode()).hexdigest()[:16]


def _stated(page: Path) -> str:
    """The override digest a page was drawn with ("" for none, or an unreadable page)."""
    try:
        with open(page, encoding="utf-8", errors="replace") as stream:  # the mark is in the page's head
            found = re.search(MARK.format("([0-9a-f]+)"), stream.read(1 << 16))
    except (OSError, ValueError):
        return ""
    return found[1] if found else ""


def _write_page_from(path: Path, page: Path, final: dict[str, Any] | None = None) -> int:
    try:
        result = SubmissionResult.from_json(path.read_text(encoding="utf-8"), path.stem)
    except (OSError, ValueError):  # unreadable, or not a results file: the report names it
        return 0
    write_page(result, page, final if isinstance(final, dict) else None)
    return 1
