"""Feedback that teaches: per step, what passed, what failed, the most likely cause, and pictures.

Everything here works from a submission's results.json (as written by
`results.gradescope_json`), so feedback can be rebuilt after grading, resuming
or merging shards. Two renderings of the same content:

* `markdown(data)`: the Gradescope `output`. It is visible at once, so it shows
  only what the visible (public) checks found; hidden checks carry their own
  output, shown when grades are published.
* `html_page(data)`: a self-contained page (PNG heatmaps inlined as data URIs)
  with every check, for the instructor to hand out: the student's attention
  weights beside the pattern they should have, with the cells that leak the
  future and the rows that do not sum to one marked.

The pictures show only the student's own numbers and the causal *pattern*,
never a hidden expected value.
"""

import base64
import html
import io
import json
import os
from pathlib import Path

from . import diagnosis
from .steps import STEPS

MAX_PICTURES_PER_STEP = 2


# --- what results.json carries ----------------------------------------------------------------------------------
def test_extra_data(test):
    """Per-test `extra_data` for results.json: the cause this failure points to and its picture."""
    if test.score >= test.max_score:
        return {}
    record = diagnosis.as_record(test)
    cause, strength = diagnosis.evidence_of(record)
    extra = {}
    if cause:
        extra.update(cause=cause, kind=record["details"].get("kind") or strength_kind(strength))
    picture = record["details"].get("picture")
    if picture:
        extra["picture"] = picture
    limit = diagnosis.limit_of(test.output)
    if limit:
        extra["limit"] = limit
    return extra


def strength_kind(strength):
    return next(kind for kind, value in diagnosis.STRENGTH.items() if value == strength)


def annotations(tests):
    """Top-level `extra_data` additions: the diagnosis of each step that lost points, and the limits hit."""
    found = diagnosis.diagnose(tests)
    limits, seen = [], set()
    for test in tests:
        kind = (test.get("extra_data") or {}).get("limit")
        step = test["name"].partition(":")[0]
        if kind and (step, kind) not in seen:
            seen.add((step, kind))
            limits.append({"step": step, "kind": kind, "message": test["output"].split("\n", 1)[0][:300]})
    return {"diagnosis": found, "limits": limits}


def steps_of(data):
    """[(step, [tests], score, max)] in chapter order, from a results.json dict."""
    extra = data.get("extra_data") or {}
    by_step = {step.key: [] for step in STEPS}
    for test in data.get("tests", []):
        by_step.setdefault(test["name"].partition(":")[0], []).append(test)
    rows = []
    for step in STEPS:
        tests = by_step.get(step.key, [])
        score = sum(t["score"] for t in tests)
        maximum = (extra.get("max_steps") or {}).get(step.key, sum(t["max_score"] for t in tests))
        rows.append((step, tests, score, maximum))
    return rows


def failed(test):
    return test["score"] < test["max_score"]


# --- Markdown (Gradescope output) -------------------------------------------------------------------------------
def markdown(data):
    """The visible part of the feedback, as Markdown: what the public checks found, per step."""
    lines = []
    problems = (data.get("extra_data") or {}).get("problems") or []
    if problems:
        lines += ["**Problems found while loading your file:**", ""] + [f"- {md(p)}" for p in problems] + [""]
    for step, tests, _, _ in steps_of(data):
        visible = [t for t in tests if t.get("visibility", "visible") == "visible"]
        hidden = len(tests) - len(visible)
        if not tests:
            continue
        lost = [t for t in visible if failed(t)]
        got = sum(t["score"] for t in visible)
        out_of = sum(t["max_score"] for t in visible)
        mark = "✅" if not lost else "❌"
        lines.append(f"### {mark} {step.number}. {step.title}: {got:g}/{out_of:g} on the visible checks")
        lines.append("")
        passed = [t for t in visible if not failed(t)]
        if passed:
            lines.append(f"Passed: {', '.join(md(short_name(t)) for t in passed)}.")
            lines.append("")
        for test in lost:
            lines.append(f"- **{md(short_name(test))}**: {md(test['output'])}")
        if lost:
            lines.append("")
            lines += hint_markdown(diagnosis.diagnose_step([diagnosis.as_record(t) for t in visible]), lost)
        if hidden:
            lines.append(f"_{hidden} hidden check(s) of this step: their results appear when grades are published._")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def hint_markdown(found, lost):
    if found:
        return [f"**Most likely cause:** {md(found['title'])}.", "",
                f"*Evidence:* {md(found['evidence'])}", "", f"*What to do:* {md(found['fix'])}.", ""]
    return ["**No single known mistake explains this.** The checks that failed are listed above; "
            "each says what differed and what to check.", ""]


def short_name(test):
    return test["name"].partition(": ")[2] or test["name"]


def md(text):
    """Text safe inside Markdown: no stray emphasis, code or HTML."""
    text = str(text).replace("\n", " ")
    for char in "\\`*_[]<>|#":
        text = text.replace(char, "\\" + char)
    return text


# --- pictures -----------------------------------------------------------------------------------------------------
def new_figure(width, height):
    """A matplotlib Figure drawn with Agg, outside pyplot's global state (safe beside grading threads)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def png_bytes(figure, tight=False):
    """PNG of a figure; `tight` crops to what is drawn (slower: it draws twice)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, **({"bbox_inches": "tight"} if tight else {}))
    return buffer.getvalue()


def data_uri(png):
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def heatmap_png(picture):
    """The student's attention weights beside the expected pattern, problems marked in red."""
    import matplotlib
    import matplotlib.patches as patches
    import numpy as np

    values = np.array([[np.nan if v is None else v for v in row] for row in picture["values"]], dtype=float)
    n = values.shape[0]
    causal = picture.get("causal", False)
    size = 0.48 * n + 1.6
    figure = new_figure(2 * size + 1.2, size)
    mine, expected = figure.subplots(1, 2)
    top = max(1.0, float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0)
    cmap = matplotlib.colormaps["Blues"].copy()
    cmap.set_bad("#bbbbbb")
    mine.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0, vmax=top)
    for i in range(n):
        for j in range(values.shape[1]):
            value = values[i, j]
            text = "NaN" if not np.isfinite(value) else f"{value:.2f}".replace("0.", ".", 1)
            mine.text(j, i, text, ha="center", va="center", fontsize=7,
                      color="white" if np.isfinite(value) and value > 0.6 * top else "black")
    for i, j in picture.get("leaks", []):
        mine.add_patch(patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#d62728", linewidth=2.2))
    bad = set(picture.get("bad_rows", []))
    for i in bad:
        mine.add_patch(patches.Rectangle((-0.5, i - 0.5), values.shape[1], 1, fill=False, edgecolor="#ff7f0e",
                                         linewidth=2.0, linestyle="--"))
    for i, total in enumerate(picture.get("row_sums", [])):
        label = "Σ=NaN" if total is None else f"Σ={total:.2f}"
        mine.text(values.shape[1] - 0.3, i, label, ha="left", va="center", fontsize=7,
                  color="#d62728" if i in bad else "#333333", fontweight="bold" if i in bad else "normal")
    columns = picture.get("column_sums")
    mine.set_title("your attention weights", fontsize=9)
    pattern = np.tril(np.ones((n, n))) if causal else np.ones((n, n))
    expected.imshow(pattern, cmap="Greens", vmin=0, vmax=2.5)
    for i in range(n):
        for j in range(n):
            expected.text(j, i, "0" if pattern[i, j] == 0 else "≥0", ha="center", va="center", fontsize=7,
                          color="#777777" if pattern[i, j] == 0 else "#1b5e20")
        expected.text(n - 0.3, i, "Σ=1", ha="left", va="center", fontsize=7, color="#1b5e20")
    expected.set_title("expected pattern" + (" (causal: the future is 0)" if causal else ""), fontsize=9)
    for axis in (mine, expected):
        axis.set_xlabel("key position j", fontsize=8)
        axis.set_ylabel("query token i", fontsize=8)
        axis.set_xticks(range(n))
        axis.set_yticks(range(n))
        axis.tick_params(labelsize=7)
    if columns:  # column sums under the key positions: a softmax over the wrong axis makes them all 1
        mine.set_xticklabels([f"{j}\nΣ={'NaN' if c is None else f'{c:.2f}'}" for j, c in enumerate(columns)])
        mine.set_xlabel("key position j (Σ: column sum)", fontsize=8)
    figure.tight_layout()
    return png_bytes(figure)


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
.legend{font-size:.85rem;color:#555}
"""


def esc(text):
    return html.escape(str(text))


def html_page(data):
    """A self-contained feedback page for one submission (every check, hints, heatmaps)."""
    extra = data.get("extra_data") or {}
    name = extra.get("submission") or "submission"
    found = extra.get("diagnosis")
    if found is None:
        found = diagnosis.diagnose(data.get("tests", []))
    total = sum(maximum for _, _, _, maximum in steps_of(data))
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Feedback: {esc(name)}</title>",
             f"<style>{STYLE}</style></head><body>",
             f"<h1>Feedback for {esc(name)}</h1>",
             f"<p class='sub'>Score {data.get('score', 0):g} / {total:g}. For each step: the checks that passed "
             "and failed, the most likely cause of a failure, and where it helps a picture of your attention "
             "weights. This page includes the hidden checks.</p>"]
    problems = extra.get("problems") or []
    if problems:
        parts.append("<div class='problems'><b>Problems found while loading your file:</b><ul>"
                     + "".join(f"<li>{esc(p)}</li>" for p in problems) + "</ul></div>")
    for step, tests, score, maximum in steps_of(data):
        parts.append(step_html(step, tests, score, maximum, found.get(step.key)))
    parts.append("</body></html>")
    return "\n".join(parts)


def step_html(step, tests, score, maximum, found):
    lost = [t for t in tests if failed(t)]
    items = []
    for test in tests:
        tag = "" if test.get("visibility", "visible") == "visible" else "<span class='tag'>hidden</span>"
        if failed(test):
            items.append(f"<li class='fail'>{esc(short_name(test))}{tag}"
                         f"<span class='msg'>{esc(test['output'])}</span></li>")
        else:
            items.append(f"<li class='pass'>{esc(short_name(test))}{tag}</li>")
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
        picture = (test.get("extra_data") or {}).get("picture")
        if picture and shown < MAX_PICTURES_PER_STEP:
            shown += 1
            parts.append(f"<figure><img alt='heatmap: {esc(picture['what'])}' src='{data_uri(heatmap_png(picture))}'>"
                         f"<figcaption>{esc(picture['what'])} ({esc(short_name(test))}). "
                         "<span class='legend'>Red squares: weight given to a future token. Dashed orange rows: "
                         "rows that do not sum to one. Right: the pattern every row should follow.</span>"
                         "</figcaption></figure>")
    parts.append("</section>")
    return "\n".join(parts)


def write_page(data, path):
    """Write the feedback page for one results.json dict to `path`."""
    from .results import write_atomic

    write_atomic(Path(path), html_page(data))
    return Path(path)


def finish(data, results, problems=()):
    """Add the feedback to a results.json dict built from the TestResults `results` (same order) of a
    file with loading `problems`: per-test causes and pictures, the step diagnoses and limits in
    `extra_data`, the cause named in the output of the failing test that shows it, the Markdown `output`."""
    data.setdefault("extra_data", {}).setdefault("problems", list(problems))
    for entry, test in zip(data["tests"], results):
        extra = test_extra_data(test)
        if extra:
            entry["extra_data"] = extra
    notes = annotations(data["tests"])
    data.setdefault("extra_data", {}).update(notes)
    for found in notes["diagnosis"].values():
        witness = next((t for t in data["tests"] if found and t["name"] == found["test"]), None)
        if witness and found["title"] not in witness["output"]:
            witness["output"] += f"\nMost likely cause: {found['title']}; {found['fix']}."
    data["output"] = markdown(data)
    data["output_format"] = "md"
    return data


def write_page_beside(results_path):
    """The feedback page of one graded file, next to its results.json (as feedback.html)."""
    path = Path(results_path)
    return write_page(json.loads(path.read_text(encoding="utf-8")), path.with_name("feedback.html"))


def write_pages(out, force=False, jobs=1):
    """OUT/feedback/<name>.html for every OUT/results/<name>.json, skipping pages newer than their
    results (a resumed run redraws only what was regraded) unless `force`; returns how many were written.

    Drawing dominates (matplotlib, one figure per failing weights check), so a class is drawn by
    `jobs` forked processes: each page is independent, and matplotlib is not thread-safe."""
    todo = []
    for path in sorted((Path(out) / "results").glob("*.json")):
        page = Path(out) / "feedback" / f"{path.stem}.html"
        if force or not page.is_file() or page.stat().st_mtime < path.stat().st_mtime:
            todo.append((path, page))
    if jobs > 1 and len(todo) > 2 * jobs:
        _draw_in_forks(todo, jobs)
        return sum(page.is_file() for _, page in todo)
    return sum(_write_page_from(path, page) for path, page in todo)


def _draw_in_forks(todo, jobs):
    """Split the pages between `jobs` forked copies of this (judge) process; nothing comes back
    but the files, so no bytes need decoding."""
    children = []
    for index in range(jobs):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                for path, page in todo[index::jobs]:
                    _write_page_from(path, page)
            except BaseException:  # noqa: BLE001 - a child must never return into the judge's code
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)


def _write_page_from(path, page):
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    write_page(data, page)
    return 1
