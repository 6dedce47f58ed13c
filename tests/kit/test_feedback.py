"""Feedback pages and the cohort report, rendered by a real browser (headless Chromium, Debian's package),
and the SVG drawing helpers on odd input.

A page counts as shown when Chromium's DOM holds the hint and the inline SVG pictures,
the pictures are laid out at a readable width (measured by a script in the page), the
marks that carry the diagnosis are drawn as specified (computed styles), and the
screenshot is far from blank.
"""

import json
import math
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest
from PIL import Image

from grader.cohort.bulk import holding
from grader.feedback import page as feedback
from grader.feedback import report
from grader.judging import results_json as results
from grader.feedback import svg
from grader.paths import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# After load, the page records what Chromium laid out: each <svg>'s width, how many <img> there are, the
# computed colour and weight of every row sum ("Σ=...") and how many dashed outlines are drawn.
PROBE = """<script>addEventListener('load', () => {
  const sums = [...document.querySelectorAll('svg text')].filter(t => t.textContent.startsWith('Σ='));
  document.body.setAttribute('data-probe', JSON.stringify({
    widths: [...document.querySelectorAll('svg')].map(s => Math.round(s.getBoundingClientRect().width)),
    images: document.images.length,
    sums: sums.map(t => [t.textContent, getComputedStyle(t).fill, getComputedStyle(t).fontWeight]),
    dashed: [...document.querySelectorAll('svg rect')].filter(r => getComputedStyle(r).strokeDasharray !== 'none'
      && getComputedStyle(r).stroke !== 'none').map(r => getComputedStyle(r).stroke),
  }));
})</script>"""
SVG_NS = "{http://www.w3.org/2000/svg}"


def chromium(*args):
    if not shutil.which(CHROMIUM):
        pytest.fail("headless Chromium is missing: `make test` installs Debian's chromium package")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--user-data-dir=/tmp/kit-chromium-profile", *args], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def rendered(page, tmp_path, height):
    """(DOM after load, screenshot) of an HTML file; the DOM records what the probe measured."""
    probe = tmp_path / f"probe-{page.name}"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = chromium("--dump-dom", "--virtual-time-budget=5000", probe.as_uri())
    shot = tmp_path / f"{page.stem}.png"
    chromium(f"--screenshot={shot}", f"--window-size=1100,{height}", page.as_uri())
    return dom, Image.open(shot).convert("RGB")


def probed(dom):
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the page's pictures were never measured (load event missing?)"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def ink(image):
    """Share of pixels that are not (near) white, and of strongly coloured ones."""
    pixels = list(image.getdata())
    dark = sum(1 for r, g, b in pixels if min(r, g, b) < 230) / len(pixels)
    coloured = sum(1 for r, g, b in pixels if max(r, g, b) - min(r, g, b) > 60) / len(pixels)
    return dark, coloured


def test_feedback_page_shows_hints_and_heatmaps(graded_bugs, maxima, tmp_path):
    data = results.gradescope_json(graded_bugs["causal_softmax_dim1"], maxima)
    page = feedback.write_page(data, tmp_path / "causal_softmax_dim1.html")
    dom, shot = rendered(page, tmp_path, height=3400)
    assert "Most likely cause:" in dom
    assert "the softmax is taken over the wrong axis" in dom
    assert "sums to 0.1802" in dom  # the failed property, quoted as evidence
    measured = probed(dom)
    assert measured["images"] == 0 and len(measured["widths"]) >= 1, measured  # pictures are inline SVG
    assert all(width > 300 for width in measured["widths"]), measured["widths"]
    dark, coloured = ink(shot)
    assert dark > 0.05 and coloured > 0.01, (dark, coloured)
    # The heatmap marks the rows that do not sum to one: their sums in bold red, the rows outlined in dashes.
    picture = next(t["extra_data"]["picture"] for t in data["tests"] if "picture" in t.get("extra_data", {}))
    assert picture["bad_rows"] and not picture["leaks"]
    red, orange = "rgb(214, 39, 40)", "rgb(255, 127, 14)"
    assert ["Σ=0.18", red, "700"] in measured["sums"], measured["sums"]
    assert all((colour == red) == (weight == "700") for _, colour, weight in measured["sums"]), measured["sums"]
    assert measured["dashed"] and set(measured["dashed"]) == {orange}, measured["dashed"]


def test_markdown_output_shows_only_visible_checks(graded_bugs, maxima, suite):
    hidden = {test.name.partition(": ")[2] for test in suite if test.visibility != "visible"}
    for bug_id in ("masking_fill_zero", "causal_softmax_dim1", "dropout_no_rescale", "mha_mask_not_sliced"):
        data = results.gradescope_json(graded_bugs[bug_id], maxima)
        assert data["output_format"] == "md"
        assert not [name for name in hidden if name in data["output"]], bug_id
    # A cause the public checks show is named at once; one only the hidden checks show waits, in their output.
    data = results.gradescope_json(graded_bugs["scaling_scale_after_softmax"], maxima)
    assert "Most likely cause:" in data["output"] and "applied after the softmax" in data["output"]
    data = results.gradescope_json(graded_bugs["wrapper_qkv_bias_not_passed"], maxima)
    assert "qkv_bias is not passed on to the heads" not in data["output"]
    assert any("qkv_bias is not passed on to the heads" in test["output"] for test in data["tests"]
               if test["visibility"] != "visible")
    # The masking step's zero fill is named by the public checks now (issue 27: the fill value is measured).
    data = results.gradescope_json(graded_bugs["masking_fill_zero"], maxima)
    assert "filled with 0 instead of -inf" in data["output"]


@pytest.mark.slow(reason='grades the sample class through `python -m grader grade`, then reports it again')
def test_sample_class_report(tmp_path, grader_cli):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "cohort: 12 submissions" in done.stdout and "mistake(s) recognised" in done.stdout
    assert sorted(path.stem for path in (out / "feedback").glob("*.html")) == sorted(
        path.stem for path in (out / "results").glob("*.json"))
    charts = {path.name: path for path in (out / "report").glob("*.*")}
    assert set(charts) == {"scores.svg", "steps.svg", "items.svg", "causes.svg", "runtime.svg"}
    for path in charts.values():  # standalone files an instructor can reuse: well-formed SVG
        assert ElementTree.parse(path).getroot().tag == SVG_NS + "svg", path
    extra = json.loads((out / "results" / "edsger_dijkstra.json").read_text())["extra_data"]
    assert extra["diagnosis"]["causal_attention"]["cause"] == "softmax_dim"
    (out / "report.html").unlink()  # the report is rebuilt from results/ alone
    again = grader_cli("report", "--out", out, cwd=ROOT)
    assert again.returncode == 0, again.stderr
    dom, shot = rendered(out / "report.html", tmp_path, height=2400)
    for heading in ("What to do next", "Scores", "Steps", "Most frequent mistakes", "Item analysis", "Runtime",
                    "Limits hit"):
        assert heading in dom
    assert "left steps unimplemented" in dom and "frances_allen: all steps" in dom  # suggested actions
    assert "feedback/edsger_dijkstra.html" in dom  # an example student, linked to their feedback page
    measured = probed(dom)
    assert measured["images"] == 0 and len(measured["widths"]) == 5, measured
    assert all(width > 500 for width in measured["widths"]), measured["widths"]
    assert re.search(r">mean \d+\.\d</text>", dom) and re.search(r">median \d+\.\d</text>", dom)
    dark, coloured = ink(shot)
    assert dark > 0.05 and coloured > 0.01, (dark, coloured)
    # While a run still grades into OUT, a report would mix its results with the last run's: it waits, and says so.
    before = (out / "report.html").read_bytes()
    with holding(out):
        busy = grader_cli("report", "--out", out, cwd=ROOT)
    assert busy.returncode == 1 and "in use by another grading run" in busy.stderr, busy.stderr
    assert (out / "report.html").read_bytes() == before


# --- the drawing helpers on odd input (no browser) ------------------------------------------------------------------
def parsed(text):
    """An SVG string as an element tree: it must be well-formed XML on its own."""
    root = ElementTree.fromstring(text)
    assert root.tag == SVG_NS + "svg"
    return root


def texts(root):
    return ["".join(element.itertext()) for element in root.iter(SVG_NS + "text")]


def test_heatmap_of_odd_pictures():
    nan = {"values": [[None, 0.5], [1e30, -2.0], [float("inf"), 0.25]], "row_sums": [None, 1e30, 0.25],
           "column_sums": [None, 1.0], "bad_rows": [0, 1, 2, "x"], "leaks": [[0, 1], [9, 9], "junk"],
           "causal": True, "what": "non-square"}
    root = parsed(feedback.heatmap_svg(nan))
    shown = texts(root)
    for label in ("NaN", ".50", "1e30", "-2.00", "inf", ".25", "Σ=NaN", "Σ=1e30", "Σ=0.25", "1.00"):
        assert any(text.endswith(label) for text in shown), (label, shown)
    rects = list(root.iter(SVG_NS + "rect"))
    assert sum(r.get("stroke") == feedback.LEAK for r in rects) == 1  # only the leak inside the grid
    assert sum(r.get("stroke-dasharray") is not None for r in rects) == 3
    assert all(r.get("fill") == svg.NAN_FILL for r in rects if "NaN" in "".join(r.itertext()))
    one = parsed(feedback.heatmap_svg({"values": [[0.42]], "row_sums": [0.42], "bad_rows": [0], "causal": True}))
    assert "Σ=0.42" in texts(one) and "≥0" in texts(one) and "Σ=1" in texts(one)
    assert float(one.get("width")) > 300  # the titles keep their room even for a 1x1 matrix
    for odd in ({"values": []}, {"values": [[None] * 3] * 3}, {}, {"values": [[0.1, 0.9], "?"]}):
        parsed(feedback.heatmap_svg(odd))
    assert "query token i" in texts(parsed(feedback.heatmap_svg({"values": [[math.nan] * 12] * 12})))


def test_text_from_students_is_escaped():
    hostile = "<script>alert('x')</script> & \"quotes\""
    picture = {"values": [[1.0]], "what": hostile}
    for text in (feedback.heatmap_svg(picture), svg.document(10, 10, [svg.text(0, 0, hostile, title=hostile)],
                                                             hostile)):
        root = parsed(text)  # the text survives, as text: the accessible name and the title
        assert "<script" not in text and root.get("aria-label") in ("heatmap: " + hostile, hostile)
        assert hostile in "".join(root.itertext())
    page = feedback.html_page({"score": 0, "tests": [{"name": "masking: x", "score": 0, "max_score": 1,
                                                      "output": "no", "extra_data": {"picture": picture}}],
                               "extra_data": {"submission": hostile}})
    assert "<script" not in page and page.count("<svg") == 1
    student = report.Submission(hostile, 10.0, {}, 30.0, [], {}, [])
    others = [report.Submission(f"s{k}", 5.0 * k, {}, 1.0 + k / 10, [], {}, []) for k in range(5)]
    threshold, outliers = report.runtime_outliers(others + [student])
    assert outliers == [student]
    chart = report.chart_runtime(others + [student], threshold)
    assert "<script" not in chart and hostile in "".join(parsed(chart).itertext())  # in its bar's tooltip


def test_chart_helpers_on_edge_cases():
    assert svg.nice_ticks(0, 101.5, 5, integer=True) == [0, 20, 40, 60, 80, 100]
    assert svg.nice_ticks(0, 1.08, 5, integer=True) == [0, 1]
    assert svg.nice_ticks(3, 3) == [3] and svg.nice_ticks(0, math.nan) == [0]
    assert svg.bin_counts([0, 4.9, 5, 100, 100], [0, 5, 100]) == [2, 3]
    assert svg.num(math.nan) == "0" and svg.num(2.0) == "2" and svg.num(2.25) == "2.2"
    assert svg.shade(-1) == svg.BLUES[0] and svg.shade(7) == svg.BLUES[-1]
    assert not svg.is_dark(svg.shade(0.1)) and svg.is_dark(svg.shade(0.9))
    for chart in (report.chart_scores([], 100), report.chart_steps({}), report.chart_items([]),
                  report.chart_causes([]), report.chart_runtime([], None)):
        parsed(chart)
    html_text, charts, summary = report.build("/nonexistent-out")
    assert charts == {} and "no graded submissions" in summary and "No graded submissions" in html_text
