"""Feedback pages and the cohort report, rendered by a real browser (headless Chromium, Debian's package).

A page counts as shown when Chromium's DOM holds the hint and the inlined PNGs,
the PNGs decode (their natural width, read by a script in the page), and the
screenshot is far from blank.
"""

import json
import re
import shutil
import subprocess
import sys

import pytest
from PIL import Image

from grader import feedback, results
from grader.suite import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PROBE = ("<script>addEventListener('load', () => document.body.setAttribute('data-image-widths', "
         "[...document.images].map(image => image.naturalWidth).join(',')))</script>")


def chromium(*args):
    if not shutil.which(CHROMIUM):
        pytest.fail("headless Chromium is missing: `make test` installs Debian's chromium package")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--user-data-dir=/tmp/kit-chromium-profile", *args], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def rendered(page, tmp_path, height):
    """(DOM after load, screenshot) of an HTML file; the DOM records the decoded images' widths."""
    probe = tmp_path / f"probe-{page.name}"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = chromium("--dump-dom", "--virtual-time-budget=5000", probe.as_uri())
    shot = tmp_path / f"{page.stem}.png"
    chromium(f"--screenshot={shot}", f"--window-size=1100,{height}", page.as_uri())
    return dom, Image.open(shot).convert("RGB")


def decoded_widths(dom):
    found = re.search(r'data-image-widths="([\d,]*)"', dom)
    assert found, "the page's images were never counted (load event missing?)"
    return [int(width) for width in found.group(1).split(",") if width]


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
    assert len(re.findall(r"<img[^>]+src=\"data:image/png;base64,", dom)) >= 1
    widths = decoded_widths(dom)
    assert widths and all(width > 300 for width in widths), widths
    dark, coloured = ink(shot)
    assert dark > 0.05 and coloured > 0.01, (dark, coloured)
    # The heatmap marks the rows that do not sum to one (their sums are in the picture's data).
    picture = next(t["extra_data"]["picture"] for t in data["tests"] if "picture" in t.get("extra_data", {}))
    assert picture["bad_rows"] and not picture["leaks"]


def test_markdown_output_shows_only_visible_checks(graded_bugs, maxima, suite):
    hidden = {test.name.partition(": ")[2] for test in suite if test.visibility != "visible"}
    for bug_id in ("masking_fill_zero", "causal_softmax_dim1", "dropout_no_rescale", "mha_mask_not_sliced"):
        data = results.gradescope_json(graded_bugs[bug_id], maxima)
        assert data["output_format"] == "md"
        assert not [name for name in hidden if name in data["output"]], bug_id
    # A cause the public checks show is named at once; one only the hidden checks show waits, in their output.
    data = results.gradescope_json(graded_bugs["scaling_scale_after_softmax"], maxima)
    assert "Most likely cause:" in data["output"] and "applied after the softmax" in data["output"]
    data = results.gradescope_json(graded_bugs["masking_fill_zero"], maxima)
    assert "filled with 0 instead of -inf" not in data["output"]
    assert any("filled with 0 instead of -inf" in test["output"] for test in data["tests"]
               if test["visibility"] != "visible")


def test_sample_class_report(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "cohort: 12 submissions" in done.stdout and "mistakes recognised" in done.stdout
    assert sorted(path.stem for path in (out / "feedback").glob("*.html")) == sorted(
        path.stem for path in (out / "results").glob("*.json"))
    charts = {path.name for path in (out / "report").glob("*.png")}
    assert charts >= {"scores.png", "steps.png", "items.png", "causes.png", "runtime.png"}
    extra = json.loads((out / "results" / "edsger_dijkstra.json").read_text())["extra_data"]
    assert extra["diagnosis"]["causal_attention"]["cause"] == "softmax_dim"
    (out / "report.html").unlink()  # the report is rebuilt from results/ alone
    again = subprocess.run([sys.executable, "-m", "grader", "report", "--out", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    dom, shot = rendered(out / "report.html", tmp_path, height=2400)
    for heading in ("What to do next", "Scores", "Steps", "Most frequent mistakes", "Item analysis", "Runtime",
                    "Limits hit"):
        assert heading in dom
    assert "left steps unimplemented" in dom and "frances_allen: all steps" in dom  # suggested actions
    assert "feedback/edsger_dijkstra.html" in dom  # an example student, linked to their feedback page
    widths = decoded_widths(dom)
    assert len(widths) >= 5 and all(width > 300 for width in widths), widths
    dark, coloured = ink(shot)
    assert dark > 0.05 and coloured > 0.01, (dark, coloured)
