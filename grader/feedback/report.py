"""The cohort report: what the class got wrong, from OUT/results/*.json alone.

`python -m grader report --out OUT` (`make report OUT=...`, and after every bulk
grading) writes OUT/report.html (self-contained, charts as inline SVG), the same
charts as files OUT/report/*.svg, and prints a short summary. Because it reads only
the per-submission results files, it can be rerun after grading, resuming or merging shards.

Contents: the score histogram, each step's pass rate, per-test failure rates with
a discrimination index (item analysis), the most frequent diagnosed mistakes
with example students, runtime outliers, submissions that hit a limit (time,
memory, crash) and files that did not load, plus a list of suggested actions.
"""

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from grader.check.causes import CAUSES
from grader.check.loader import left_out_note
from grader.feedback import class_view, diagnosis
from grader.feedback.class_view import Submission
from grader.feedback import svg
from grader.outfiles import write_atomic
from grader.text import html as esc
from grader.chapter import BY_KEY, STEP_KEYS, STEPS, TOTAL_POINTS
from grader.results import ResultsFormatError, SubmissionResult
from grader.sandbox.limits import Limit



Maxima = Mapping[str, float]  # points per step key
Rates = dict[str, tuple[float, float]]  # step -> (share with full marks, mean share of the points)
Item = tuple[str, str, str, float, float | None]  # (test name, step, visibility, failure rate, discrimination)
CauseCount = tuple[str, str, list[str]]  # (cause, step, submission names)
LimitRow = tuple[str, dict[str, Any]]  # (submission name, the limit it hit: step, kind, message)


# (removing the file instead would leave the student out of the report, beside a grades.csv that grades them)
AGAIN = "grade that submission again (make regrade STUDENT={}, or the class's make grade command)"


class ResultsError(ValueError):
    """A file in OUT/results/ that is not a results file of this grader: the message names it."""


def read_results(path: Path) -> SubmissionResult:
    """The result one results file holds; ResultsError, naming the file, for one that is not this grader's."""
    not_ours = ResultsError(f"{path} is not a results file of this grader: {AGAIN.format(Path(path).stem)}")
    try:
        return SubmissionResult.from_json(path.read_text(encoding="utf-8"), path.stem)
    except ResultsFormatError:
        raise not_ours from None
    except (OSError, ValueError) as error:  # UnicodeDecodeError is a ValueError
        raise ResultsError(f"{path} cannot be read ({str(error)[:120]}): {AGAIN.format(path.stem)}") from None


def load(out: str | Path) -> tuple[list[Submission], dict[str, float]]:
    """The graded submissions of OUT/results/*.json, and the per-step maxima."""
    submissions: list[Submission] = []
    maxima: dict[str, float] = {}
    for path in sorted((Path(out) / "results").glob("*.json")):
        result = read_results(path)
        try:
            maxima = maxima or {key: float(value) for key, value in result.max_steps.items()}
            found = result.diagnosis
            if found is None:  # results written before diagnosis existed: work it out from the tests
                found = diagnosis.diagnose(result.tests)
            limits = [limit for limit in result.limits or [] if Limit.parse(limit.get("kind"))]
        except (TypeError, ValueError, AttributeError):  # a field of the wrong type: not this grader's file
            raise ResultsError(f"{path} is not a results file of this grader: {AGAIN.format(path.stem)}") from None
        submissions.append(Submission(result.name, result.score, result.rounded_steps(), result.seconds,
                                      result.problems, found, limits, result.tests))
    return submissions, maxima


# --- statistics ---------------------------------------------------------------------------------------------------
def step_rates(submissions: Sequence[Submission], maxima: Maxima) -> Rates:
    """{step: (share with full marks, mean share of the points)}."""
    rates = {}
    for key in STEP_KEYS:
        top = maxima.get(key) or 0
        if not submissions or not top:
            continue
        scores = [s.steps.get(key, 0.0) for s in submissions]
        rates[key] = (sum(score >= top - 1e-9 for score in scores) / len(scores),
                      statistics.fmean(score / top for score in scores))
    return rates


def item_analysis(submissions: Sequence[Submission]) -> list[Item]:
    """[(test name, step, visibility, failure rate, discrimination or None)] in suite order.
    Discrimination: the correlation between passing the test and the rest of the score."""
    names = list(dict.fromkeys(test.name for submission in submissions for test in submission.tests))
    items = []
    for name in names:
        passed: list[float] = []
        rest: list[float] = []
        visibility = "visible"
        for submission in submissions:
            test = next((t for t in submission.tests if t.name == name), None)
            if test is None:
                continue
            visibility = test.visibility
            passed.append(1.0 if test.passed else 0.0)
            rest.append(submission.score - test.score)
        failure = 1 - statistics.fmean(passed) if passed else 0.0
        items.append((name, name.partition(":")[0], visibility, failure, correlation(passed, rest)))
    return items


def correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r, or None where it says nothing: under 3 submissions, or everyone alike on one side."""
    if len(xs) < 3:
        return None
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:  # a constant input: no correlation to speak of
        return None


def load_errors(submission: Submission) -> list[Any]:
    """The loading problems that cost points: not the notes on IPython lines left out (`%matplotlib`...)."""
    return [problem for problem in submission.problems if not left_out_note(problem)]


def cause_counts(submissions: Iterable[Submission]) -> list[CauseCount]:
    """[(cause, step, [submission names])], most frequent first."""
    found: dict[tuple[str, str], list[str]] = {}
    for submission in submissions:
        for step, diagnosed in submission.diagnosis.items():
            if diagnosed:
                found.setdefault((diagnosed["cause"], step), []).append(submission.name)
    return sorted(((cause, step, names) for (cause, step), names in found.items()),
                  key=lambda item: (-len(item[2]), STEP_KEYS.index(item[1]) if item[1] in STEP_KEYS else 99))


NOT_DONE = ("not implemented yet", "is not defined in your submission")


def unfinished(submission: Submission) -> list[str]:
    """The steps a submission left undone: every failed check of the step says it is not implemented."""
    steps = []
    for key in STEP_KEYS:
        tests = [t for t in submission.tests if t.step == key]
        lost = [t for t in tests if not t.passed]
        if lost and len(lost) == len(tests) and all(any(m in t.output for m in NOT_DONE) for t in lost):
            steps.append(key)
    return steps


def undiagnosed(submissions: Iterable[Submission], maxima: Maxima) -> dict[str, list[str]]:
    """{step: [names]} of submissions that lost points in a step they did attempt, with no cause named
    (worth a look by hand)."""
    found: dict[str, list[str]] = {}
    for submission in submissions:
        if class_view.not_graded(submission):  # the whole file: named as such, not step by step
            continue
        undone = unfinished(submission)
        for key in STEP_KEYS:
            lost = submission.steps.get(key, 0.0) < (maxima.get(key) or 0) - 1e-9
            if lost and key not in undone and not submission.diagnosis.get(key):
                found.setdefault(key, []).append(submission.name)
    return found


def runtime_outliers(submissions: Sequence[Submission]) -> tuple[float | None, list[Submission]]:
    """(threshold seconds, [submissions slower than it]): three times the median, median + 3 robust
    sigmas, and at least 5 s over the median (the first submissions also pay for warming up)."""
    times = [s.seconds for s in submissions if s.seconds > 0]
    if len(times) < 3:
        return None, []
    median = statistics.median(times)
    spread = 1.4826 * statistics.median(abs(t - median) for t in times)
    threshold = max(3 * median, median + 3 * spread, median + 5.0)
    return threshold, sorted((s for s in submissions if s.seconds > threshold), key=lambda s: -s.seconds)


# --- charts (inline SVG, also saved as OUT/report/<name>.svg) ----------------------------------------------------
BLUE, ORANGE, GREEN, RED = "#4c72b0", "#dd8452", "#55a868", "#c44e52"
STEP_COLOURS = {step.key: step.colour for step in STEPS}
WIDE = 900  # natural width of the wide charts (the page is about 1000 pixels wide)


def heading(title: str, legend_entries: Sequence[svg.LegendEntry] = (), width: float = WIDE) -> list[str]:
    """The chart's title at the top left and its legend at the top right (never over the data)."""
    parts = [svg.text(8, 16, title, size=14, bold=True)]
    if legend_entries:
        parts.append(svg.legend(width - 10, 36, legend_entries))
    return parts


def label_room(labels: Iterable[str], size: float) -> float:
    """Pixels to the left of a frame for right-aligned category labels."""
    return 20 + max((svg.text_width(label, size) for label in labels), default=0)


def chart_scores(submissions: Sequence[Submission], total: float) -> str:
    """Histogram of the scores (bins of a twentieth of the total), the mean and median marked."""
    width, height = 720, 310
    scores = [s.score for s in submissions]
    step = max(1.0, total / 20)
    edges = [i * step for i in range(int(math.ceil(total / step)) + 2)]
    counts = svg.bin_counts(scores, edges)
    most = max(counts, default=0) or 1
    frame = svg.Frame(62, 56, width - 62 - 24, height - 56 - 50, (0, edges[-1]), (0, most * 1.08))
    entries: list[svg.LegendEntry] = [("bar", BLUE, "submissions", None)]
    lines = []
    if scores:
        mean, median = statistics.fmean(scores), statistics.median(scores)
        entries += [("line", ORANGE, f"mean {mean:.1f}", "6 4"), ("line", GREEN, f"median {median:.1f}", "2 3")]
        lines = [svg.reference_line(frame, mean, ORANGE), svg.reference_line(frame, median, GREEN, dash="2 3")]
    parts = heading("Score distribution", entries, width) + [
        svg.axes(frame, svg.nice_ticks(0, total, 5), svg.nice_ticks(0, most * 1.08, 5, integer=True),
                 f"score (out of {total:g})", "submissions"),
        svg.histogram(frame, edges, counts, BLUE, what="submissions")] + lines
    return svg.document(width, height, parts, "Score distribution")


def chart_steps(rates: Rates) -> str:
    """Per step: the share with full marks (bars) and the mean share of the points (dots)."""
    keys = [key for key in STEP_KEYS if key in rates]
    labels = [f"{BY_KEY[key].number}. {key}" for key in keys]
    width, pitch = 720, 34
    left = label_room(labels, 12)
    frame = svg.Frame(left, 56, width - left - 56, pitch * max(1, len(keys)), (0, 100), (0, 1))
    full = [100 * rates[key][0] for key in keys]
    mean = [100 * rates[key][1] for key in keys]
    tips = [f"{label}: {a:.0f}% with full marks, {b:.0f}% of the points on average"
            for label, a, b in zip(labels, full, mean)]
    dots = [svg.circle(frame.x(value), frame.top + (k + 0.5) * pitch, 6, ORANGE, title=tips[k])
            for k, value in enumerate(mean)]
    parts = heading("Per-step pass rate", [("bar", BLUE, "full marks", None),
                                            ("dot", ORANGE, "mean share of points", None)], width) + [
        svg.axes(frame, svg.nice_ticks(0, 100, 5), (), "% of submissions", grid="x"),
        svg.hbars(frame, full, [BLUE], labels, tips, size=12)] + dots
    return svg.document(width, frame.bottom + 46, parts, "Per-step pass rate")


def chart_items(items: Sequence[Item]) -> str:
    """Failure rate of every check that someone failed, coloured by step, hardest to spot at a glance."""
    shown = [item for item in items if item[3] > 0] or items[:1]
    labels = [shorten(item[0], 70) for item in shown]
    pitch = 18
    left = label_room(labels, 11)
    frame = svg.Frame(left, 62, WIDE - left - 50, pitch * max(1, len(shown)), (0, 100), (0, 1))
    tips = [f"{name} ({visibility}): failed by {failure:.0%}" for name, _, visibility, failure, _ in shown]
    steps = [key for key in STEP_KEYS if any(item[1] == key for item in shown)]
    parts = [svg.text(8, 16, "Per-test failure rate (checks that someone failed; colour = step)", size=14,
                      bold=True),
             svg.legend(WIDE - 10, 40, [("bar", STEP_COLOURS[key], key, None) for key in steps]),
             svg.axes(frame, svg.nice_ticks(0, 100, 5), (), "% of submissions failing the check", grid="x")]
    for k, item in enumerate(shown):  # one call per bar: each has its step's colour
        row = svg.Frame(frame.left, frame.top + k * pitch, frame.width, pitch, frame.x_range)
        parts.append(svg.hbars(row, [100 * item[3]], [STEP_COLOURS.get(item[1], "#999999")], labels[k:k + 1],
                               tips[k:k + 1], value_format=lambda v: f"{v:.0f}%", size=11))
    return svg.document(WIDE, frame.bottom + 46, parts, "Per-test failure rate")


def chart_causes(counts: Sequence[CauseCount]) -> str:
    """The twelve most frequent diagnosed mistakes, by how many submissions show them."""
    top = counts[:12]
    labels = [shorten(f"{step}: {CAUSES[cause].title}", 80) for cause, step, _ in top]
    pitch = 26
    left = label_room(labels, 11)
    most = max((len(names) for _, _, names in top), default=1)
    frame = svg.Frame(left, 40, WIDE - left - 40, pitch * max(1, len(top)), (0, most * 1.05), (0, 1))
    tips = [f"{CAUSES[cause].title} [{step}]: {len(names)} submission(s), e.g. "
            + ", ".join(names[:8]) + (" …" if len(names) > 8 else "") for cause, step, names in top]
    parts = heading("Most frequent diagnosed mistakes") + [
        svg.axes(frame, svg.nice_ticks(0, most, 5, integer=True), (), "submissions", grid="x"),
        svg.hbars(frame, [len(names) for _, _, names in top], [RED], labels, tips,
                  value_format=lambda v: f"{v:g}", size=11)]
    return svg.document(WIDE, frame.bottom + 46, parts, "Most frequent diagnosed mistakes")


def chart_runtime(submissions: Sequence[Submission], threshold: float | None) -> str:
    """Grading time of each submission, fastest to slowest; outliers (above `threshold`) in red and named.
    Every name is written under its bar when there is room (each bar also has a tooltip)."""
    ordered = sorted(submissions, key=lambda s: s.seconds)
    slow = [s.seconds > threshold if threshold else False for s in ordered]
    count = max(1, len(ordered))
    frame_width = WIDE - 62 - 24
    names = [shorten(s.name, 18) for s in ordered] if frame_width / count >= 11 else []
    top_value = max([s.seconds for s in ordered] + [threshold or 0]) or 1
    frame = svg.Frame(62, 56, frame_width, 200, (0, count), (0, top_value * 1.08))
    entries: list[svg.LegendEntry] = [("bar", BLUE, "submission", None)]
    if threshold:
        entries += [("bar", RED, "outlier", None), ("line", RED, f"outlier above {threshold:.1f} s", "6 4")]
    parts = heading("Grading time per submission", entries) + [
        svg.axes(frame, (), svg.nice_ticks(0, top_value * 1.08, 5), "", "seconds"),
        svg.vbars(frame, [(k, k + 1) for k in range(len(ordered))], [s.seconds for s in ordered],
                  [RED if out else BLUE for out in slow], [f"{s.name}: {s.seconds:.1f} s" for s in ordered],
                  gap=min(2.0, frame_width / count / 4))]
    if threshold:
        parts.append(svg.reference_line(frame, threshold, RED, vertical=False))
    outliers = [s for s, out in zip(ordered, slow) if out][::-1]
    if outliers:  # slowest first, in the empty top left corner (the fast bars are short)
        listed = ", ".join(f"{shorten(s.name, 24)} ({s.seconds:.1f} s)" for s in outliers[:5])
        more = f" and {len(outliers) - 5} more" if len(outliers) > 5 else ""
        parts.append(svg.text(frame.left + 8, frame.top + 12, f"slowest: {listed}{more}", size=11, colour=RED))
    for k, name in enumerate(names):
        parts.append(svg.text(frame.x(k + 0.5), frame.bottom + 8, name, size=10, anchor="end",
                              colour=RED if slow[k] else svg.MUTED, rotate=-60))
    room = max((svg.text_width(name, 10) for name in names), default=0) * 0.87  # how far rotated names reach
    below = frame.bottom + 10 + room
    parts.append(svg.text(frame.left + frame.width / 2, below + 14,
                          f"submissions, fastest to slowest ({len(ordered)})", size=12, anchor="middle"))
    return svg.document(WIDE, below + 28, parts, "Grading time per submission")


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the report -----------------------------------------------------------------------------------------------------
def example_links(names: Sequence[str], out: str | Path, limit: int = 4) -> str:
    links = []
    for name in names[:limit]:
        page = Path(out) / "feedback" / f"{name}.html"
        href = esc(f"feedback/{quote(name)}.html")  # a path segment, percent-encoded, then HTML-escaped
        links.append(f"<a href='{href}'>{esc(name)}</a>" if page.is_file() else esc(name))
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(links) + more


def actions(submissions: Sequence[Submission], maxima: Maxima, rates: Rates, items: Sequence[Item],
            counts: Sequence[CauseCount], outliers: Sequence[Submission], limit_rows: Sequence[LimitRow]) -> list[str]:
    """Plain suggestions an instructor can act on, most useful first."""
    tips = []
    if counts and len(counts[0][2]) > 1:
        cause, step, names = counts[0]
        tips.append(f"Most frequent mistake: {CAUSES[cause].title} ({step}, {len(names)} "
                    f"submissions). Revisit it in class: {CAUSES[cause].fix}.")
    elif counts:
        tips.append(f"{len(counts)} different mistakes were recognised, none in more than one submission: the "
                    "individual feedback pages (linked below) will help more than a class-wide review.")
    undone = [(s.name, unfinished(s)) for s in submissions]
    undone = [(name, steps) for name, steps in undone if steps]
    if undone:
        tips.append(f"{len(undone)} submission(s) left steps unimplemented ("
                    + ", ".join(f"{name}: {'all steps' if len(steps) == len(STEP_KEYS) else ', '.join(steps)}"
                                for name, steps in undone[:4]) + "): a reminder or an extension may help more "
                    "than feedback.")
    if rates:
        hardest = min(rates, key=lambda key: rates[key][0])
        if rates[hardest][0] < 1:
            tips.append(f"Hardest step: {BY_KEY[hardest].number}. {BY_KEY[hardest].title} — only "
                        f"{rates[hardest][0]:.0%} of the submissions have it fully right.")
    everyone = [item for item in items if item[3] == 1 and len(submissions) > 1]
    if everyone:
        tips.append(f"{len(everyone)} check(s) failed by every submission (e.g. \"{everyone[0][0]}\"): "
                    "check the instructions or the test.")
    negative = [item for item in items if item[4] is not None and item[4] < -0.2]
    if negative:
        tips.append(f"{len(negative)} check(s) are failed more by strong submissions than weak ones (negative "
                    f"discrimination, e.g. \"{negative[0][0]}\"): review them.")
    if limit_rows:
        tips.append(f"{len({name for name, _ in limit_rows})} submission(s) hit a time/memory limit or crashed: "
                    "look at them by hand (listed below).")
    if outliers:
        tips.append(f"{len(outliers)} submission(s) graded unusually slowly (e.g. {outliers[0].name}, "
                    f"{outliers[0].seconds:.1f} s): often a loop where a tensor operation belongs.")
    refused = [s for s in submissions if class_view.not_graded(s)]
    if refused:
        tips.append(f"{len(refused)} file(s) could not be graded at all (e.g. {class_view.not_graded(refused[0])}): "
                    "listed below; ask for the file again.")
    unloaded = [s for s in submissions if load_errors(s) and s not in refused]
    if unloaded:
        tips.append(f"{len(unloaded)} file(s) had parts that did not load (syntax errors, bad notebooks): "
                    "their authors lost points for code that never ran.")
    return tips


def build(out: str | Path) -> tuple[str, dict[str, str], str]:
    """(html text, {chart file name: SVG text}, summary text) for OUT's graded submissions."""
    submissions, maxima = load(out)
    record = class_view.read_class(out)  # roster names, late flags, final scores (overrides applied)
    class_view.apply_finals(submissions, record)
    rows, absent = class_view.student_rows(submissions, record, maxima), class_view.not_submitted(record)
    strays = class_view.unmatched(record)
    total = sum(maxima.values()) or TOTAL_POINTS
    rates = step_rates(submissions, maxima)
    items = item_analysis(submissions)
    counts = cause_counts(submissions)
    missing = undiagnosed(submissions, maxima)
    threshold, outliers = runtime_outliers(submissions)
    limit_rows = [(s.name, limit) for s in submissions for limit in s.limits]
    tips = actions(submissions, maxima, rates, items, counts, outliers, limit_rows)
    charts = {}
    if submissions:
        charts["scores.svg"] = chart_scores(submissions, total)
        charts["steps.svg"] = chart_steps(rates)
        charts["items.svg"] = chart_items(items)
        charts["runtime.svg"] = chart_runtime(submissions, threshold)
        if counts:
            charts["causes.svg"] = chart_causes(counts)
    scores = [s.score for s in submissions]
    summary = summary_text(submissions, total, rates, counts, outliers, limit_rows,
                           class_view.summary_lines(rows, absent, strays))

    def image(name):
        return f"<figure>{charts[name]}</figure>" if name in charts else ""

    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Cohort report</title>"
             f"<style>{STYLE}</style></head><body><h1>Cohort report</h1>"]
    if not submissions:
        parts.append("<p>No graded submissions found in results/.</p></body></html>")
        return "\n".join(parts), charts, summary
    parts.append(f"<p class='sub'>{len(submissions)} submissions · mean {statistics.fmean(scores):.1f} · median "
                 f"{statistics.median(scores):.1f} · min {min(scores):g} · max {max(scores):g} (out of {total:g}) · "
                 f"{sum(s >= total - 1e-9 for s in scores)} with full marks · {sum(s == 0 for s in scores)} "
                 "with zero</p>")
    if (Path(out) / "integrity.html").is_file():  # written just before the report by every class run
        parts.append("<p class='sub'><a href='integrity.html'>Cohort integrity</a>: pairs of students whose code "
                     "or wrong outputs have more in common than the book explains (evidence to read, not proof).</p>")
    parts.append("<h2>What to do next</h2><ul class='tips'>" + "".join(f"<li>{esc(tip)}</li>" for tip in tips)
                 + "</ul>")
    parts.append(class_view.students_section(rows, maxima, out) + class_view.missing_section(absent, strays)
                 + class_view.overrides_section(rows))
    parts.append("<h2>Scores</h2>" + image("scores.svg"))
    by_step, by_check = class_view.step_causes(submissions), class_view.check_causes(submissions)
    parts.append("<h2>Steps</h2>" + image("steps.svg") + "<table><tr><th>step</th>"
                 "<th>full marks</th><th>mean share of points</th><th>most common causes</th></tr>"
                 + "".join(f"<tr><td>{BY_KEY[key].number}. {esc(BY_KEY[key].title)}</td><td>{rate[0]:.0%}</td>"
                           f"<td>{rate[1]:.0%}</td><td><small>{esc(class_view.causes_text(by_step.get(key, [])))}"
                           "</small></td></tr>" for key, rate in rates.items()) + "</table>")
    parts.append("<h2>Most frequent mistakes (diagnosed)</h2>" + (
        f"<p class='sub'>{len(counts)} mistake(s) recognised in {len({n for _, _, names in counts for n in names})} "
        "submission(s)</p>" if counts else "") + image("causes.svg"))
    if counts:
        parts.append("<table><tr><th>mistake</th><th>step</th><th>count</th><th>examples</th></tr>" + "".join(
            f"<tr><td><b>{esc(CAUSES[cause].title)}</b><br><small>fix: "
            f"{esc(CAUSES[cause].fix)}</small></td><td>{esc(step)}</td><td>{len(names)}</td>"
            f"<td>{example_links(names, out)}</td></tr>" for cause, step, names in counts) + "</table>")
    else:
        parts.append("<p>No known mistake was recognised.</p>")
    if missing:
        parts.append("<p>Points lost where no known mistake was recognised (worth a look): " + "; ".join(
            f"{esc(step)}: {example_links(names, out)}" for step, names in missing.items()) + "</p>")
    parts.append("<h2>Item analysis</h2>" + image("items.svg")
                 + "<table><tr><th>check (hardest first)</th><th>visibility</th><th>failed by</th>"
                 "<th>discrimination</th><th>most common causes</th></tr>"
                 + "".join(item_row(item, by_check.get(item[0], []))
                           for item in sorted(items, key=lambda item: -item[3]))
                 + "</table>"
                 "<p class='sub'>Discrimination: correlation between passing the check and the rest of the score "
                 "(near 0 or negative: the check does not separate strong from weak work).</p>")
    parts.append("<h2>Runtime</h2>" + image("runtime.svg"))
    if outliers:
        parts.append("<table><tr><th>submission</th><th>seconds</th></tr>" + "".join(
            f"<tr><td>{example_links([s.name], out)}</td><td>{s.seconds:.1f}</td></tr>" for s in outliers)
            + "</table>")
    else:
        parts.append("<p>No runtime outliers.</p>")
    parts.append("<h2>Limits hit</h2>")
    if limit_rows:
        parts.append("<table><tr><th>submission</th><th>step</th><th>limit</th><th>message</th></tr>" + "".join(
            f"<tr><td>{example_links([name], out)}</td><td>{esc(limit['step'])}</td>"
            f"<td>{esc(Limit(limit['kind']).words)}</td><td><small>{esc(limit['message'])}"
            "</small></td></tr>" for name, limit in limit_rows) + "</table>")
    else:
        parts.append("<p>No submission hit a time or memory limit or crashed.</p>")
    unloaded = [s for s in submissions if load_errors(s)]
    if unloaded:
        parts.append("<h2>Files that did not load cleanly</h2><table><tr><th>submission</th><th>problem</th></tr>"
                     + "".join(f"<tr><td>{example_links([s.name], out)}</td><td><small>{esc('; '.join(load_errors(s)))}"
                               "</small></td></tr>" for s in unloaded) + "</table>")
    parts.append("</body></html>")
    return "\n".join(parts), charts, summary


def item_row(item: Item, causes: Iterable[tuple[str, int]] = ()) -> str:
    name, _, visibility, failure, discrimination = item
    flag = " class='flag'" if failure == 1 or (discrimination is not None and discrimination < -0.2) else ""
    shown = "—" if discrimination is None else f"{discrimination:+.2f}"
    return (f"<tr{flag}><td>{esc(name)}</td><td>{esc(visibility)}</td><td>{failure:.0%}</td>"
            f"<td>{shown}</td><td><small>{esc(class_view.causes_text(list(causes)))}</small></td></tr>")


def summary_text(submissions: Sequence[Submission], total: float, rates: Rates, counts: Sequence[CauseCount],
                 outliers: Sequence[Submission], limit_rows: Sequence[LimitRow],
                 class_lines: Iterable[str] = ()) -> str:
    if not submissions:
        return "cohort report: no graded submissions"
    scores = [s.score for s in submissions]
    lines = [f"cohort: {len(submissions)} submissions, mean {statistics.fmean(scores):.1f}, median "
             f"{statistics.median(scores):.1f} of {total:g}; {sum(s >= total - 1e-9 for s in scores)} full marks, "
             f"{sum(s == 0 for s in scores)} zero"]
    if rates:
        hardest = sorted(rates, key=lambda key: rates[key][0])[:2]
        lines.append("hardest steps: " + ", ".join(f"{key} ({rates[key][0]:.0%} full marks)" for key in hardest))
    if counts:  # the same count as the report's table of mistakes, of which the top three are named
        lines.append(f"{len(counts)} mistake(s) recognised in {len({n for _, _, names in counts for n in names})} "
                     "submission(s); " + ("most frequent: " if len(counts[0][2]) > 1 else "one submission each: ")
                     + "; ".join(
            f"{CAUSES[cause].title} [{step}]{f' x{len(names)}' if len(names) > 1 else ''} "
            f"({', '.join(names[:3])})"
            for cause, step, names in counts[:3]))
    if outliers:
        lines.append("runtime outliers: " + ", ".join(f"{s.name} ({s.seconds:.1f} s)" for s in outliers[:5]))
    if limit_rows:
        lines.append("limits hit: " + ", ".join(f"{name} ({limit['step']}: {limit['kind']})"
                                                for name, limit in limit_rows[:5]))
    refused = [(s.name, class_view.not_graded(s)) for s in submissions if class_view.not_graded(s)]
    if refused:  # in the words of their feedback pages
        lines.append(f"not graded at all: {len(refused)} (" + "; ".join(f"{name}: {why}" for name, why in refused[:3])
                     + ("; ..." if len(refused) > 3 else "") + ")")
    return "\n".join(lines + list(class_lines))


CHART_NAMES = ("scores", "steps", "items", "causes", "runtime")


def write_report(out: str | Path) -> str:
    """Write OUT/report.html and its charts as OUT/report/*.svg (to reuse in slides); return the summary."""
    out = Path(out)
    text, charts, summary = build(out)
    for name in CHART_NAMES:  # no stale chart of an earlier run (or its PNG from older versions) stays behind
        for old in (out / "report" / f"{name}.png", out / "report" / f"{name}.svg"):
            if old.name not in charts and old.is_file():
                old.unlink()
    for name, chart in charts.items():
        write_atomic(out / "report" / name, chart)
    write_atomic(out / "report.html", text)
    return summary + f"\nreport: {out / 'report.html'}"


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:64rem;color:#222;
line-height:1.45;padding:0 1rem} .sub{color:#666}
h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem} td,th{border:1px solid #ddd;padding:.25rem .5rem;
text-align:left;vertical-align:top} th{background:#f5f5f5} tr.flag td{background:#fff3e0}
ul.tips li{margin:.3rem 0} figure{margin:.8rem 0} svg{display:block;max-width:100%;height:auto}
"""
