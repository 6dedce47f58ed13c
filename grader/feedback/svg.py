"""Small SVG drawing helpers for the feedback pages and the cohort report.

Every picture is a plain string: no plotting library, so a class's pages are drawn in a
fraction of a second and inline in HTML (they scale with the page, and their text stays
selectable and searchable). Coordinates are pixels of the picture's own `viewBox`;
`document` gives it a natural width and lets it shrink to fit (max-width: 100%).

All text goes through `esc` (names and messages can come from student files), and every
number through `num`, so a NaN or an infinity can never produce broken markup.

Charts work in a `Frame`: the plot area in pixels and the data range it shows.
"""

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from grader.text import html as esc

FONT = "system-ui,-apple-system,'Segoe UI',sans-serif"
INK, MUTED, GRID = "#222222", "#555555", "#e6e6e6"
NAN_FILL = "#bbbbbb"
# ColorBrewer's "Blues" (9 classes), light to dark: the scale of attention weights.
BLUES = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
CHAR_WIDTH = 0.56  # average width of a character of sans-serif text, in font sizes (to reserve room)
Cell = tuple[str, str, str, str | None]  # a heatmap cell: (fill, label, label colour, tooltip or None)
LegendEntry = tuple[str, str, str, str | None]  # (kind: bar, line or dot; colour; text; dash or None)


def num(value: float) -> str:
    """A coordinate as short text (0 for anything not finite, so markup stays valid)."""
    value = float(value)
    if not math.isfinite(value):
        return "0"
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def text_width(text: object, size: float, bold: bool = False) -> float:
    """Roughly how wide `text` is drawn at font `size` (to leave room for labels)."""
    return len(str(text)) * size * CHAR_WIDTH * (1.1 if bold else 1.0)


def shade(share: float, scale: Sequence[str] = BLUES) -> str:
    """The colour of `share` (0..1, clipped) on a scale of colours, interpolated linearly."""
    share = min(1.0, max(0.0, float(share)))
    where = share * (len(scale) - 1)
    low = min(int(where), len(scale) - 2)
    part = where - low
    a, b = (tuple(int(colour[k:k + 2], 16) for k in (1, 3, 5)) for colour in scale[low:low + 2])
    return "#" + "".join(f"{round(x + (y - x) * part):02x}" for x, y in zip(a, b))


def is_dark(colour: str) -> bool:
    """Whether white text reads better than black on `colour` (#rrggbb)."""
    r, g, b = (int(colour[k:k + 2], 16) for k in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b < 140


# --- elements -------------------------------------------------------------------------------------------------------
def document(width: float, height: float, body: Iterable[str], label: str) -> str:
    """A whole <svg> element: natural size width x height, scaling down with its container."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {num(width)} {num(height)}" '
            f'width="{num(width)}" height="{num(height)}" role="img" aria-label="{esc(label)}" '
            f'font-family="{FONT}" style="max-width:100%;height:auto">'
            f"<title>{esc(label)}</title>{''.join(body)}</svg>")


def text(x: float, y: float, content: object, size: float = 11, anchor: str = "start", colour: str = INK,
         bold: bool = False, rotate: float | None = None, title: str | None = None) -> str:
    """One line of text whose middle sits at height y."""
    style = ' font-weight="bold"' if bold else ""
    turn = f' transform="rotate({num(rotate)} {num(x)} {num(y)})"' if rotate else ""
    tip = f"<title>{esc(title)}</title>" if title else ""
    return (f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}" text-anchor="{anchor}" '
            f'dominant-baseline="central" fill="{colour}"{style}{turn}>{tip}{esc(content)}</text>')


def rect(x: float, y: float, width: float, height: float, fill: str = "none", stroke: str | None = None,
         stroke_width: float = 1, dash: str | None = None, title: str | None = None) -> str:
    line = f' stroke="{stroke}" stroke-width="{num(stroke_width)}"' if stroke else ""
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    tip = f"<title>{esc(title)}</title>" if title else ""
    return (f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(0, width))}" height="{num(max(0, height))}" '
            f'fill="{fill}"{line}{dashes}>{tip}</rect>')


def line(x1: float, y1: float, x2: float, y2: float, colour: str = INK, width: float = 1,
         dash: str | None = None) -> str:
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{colour}" '
            f'stroke-width="{num(width)}"{dashes}/>')


def circle(x: float, y: float, radius: float, fill: str, title: str | None = None) -> str:
    tip = f"<title>{esc(title)}</title>" if title else ""
    return f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(radius)}" fill="{fill}">{tip}</circle>'


# --- a grid of coloured cells -------------------------------------------------------------------------------------
def heatmap(x: float, y: float, cell: float, rows: Sequence[Sequence[Cell]], size: float = 11) -> str:
    """A grid of squares with text: rows[i][j] = (fill, label, label colour, tooltip or None),
    drawn with its top-left corner at (x, y), `cell` pixels a side."""
    parts = []
    for i, row in enumerate(rows):
        for j, (fill, label, ink, tip) in enumerate(row):
            left, top = x + j * cell, y + i * cell
            parts.append(rect(left, top, cell, cell, fill=fill, stroke="#ffffff", stroke_width=1, title=tip))
            if label:
                parts.append(text(left + cell / 2, top + cell / 2, label, size=size, anchor="middle", colour=ink))
    return "".join(parts)


# --- charts ---------------------------------------------------------------------------------------------------------
@dataclass
class Frame:
    """A plot area (pixels) showing x_range horizontally and y_range vertically (y grows upwards)."""
    left: float
    top: float
    width: float
    height: float
    x_range: tuple[float, float] = (0.0, 1.0)
    y_range: tuple[float, float] = (0.0, 1.0)

    def x(self, value: float) -> float:
        lo, hi = self.x_range
        return self.left + (value - lo) / ((hi - lo) or 1) * self.width

    def y(self, value: float) -> float:
        lo, hi = self.y_range
        return self.top + self.height - (value - lo) / ((hi - lo) or 1) * self.height

    @property
    def bottom(self) -> float:
        return self.top + self.height

    @property
    def right(self) -> float:
        return self.left + self.width


def nice_ticks(low: float, high: float, count: int = 5, integer: bool = False) -> list[float]:
    """About `count` round tick values covering low..high (steps of 1, 2 or 5 times a power of ten)."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low if math.isfinite(low) else 0.0]
    raw = (high - low) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= 0.75 * raw)  # count or a few more
    if integer:
        step = max(1, round(step))
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def tick_text(value: float) -> str:
    return f"{value:g}"


def axes(frame: Frame, x_ticks: Iterable[float] = (), y_ticks: Iterable[float] = (), x_label: str = "",
         y_label: str = "", x_format: Callable[[float], str] = tick_text,
         y_format: Callable[[float], str] = tick_text, grid: str = "y") -> str:
    """The frame's box, tick marks with labels, light grid lines (`grid`: "x", "y" or "") and axis labels."""
    parts = []
    for value in y_ticks:
        at = frame.y(value)
        if grid == "y":
            parts.append(line(frame.left, at, frame.right, at, colour=GRID))
        parts.append(line(frame.left - 4, at, frame.left, at, colour=MUTED))
        parts.append(text(frame.left - 7, at, y_format(value), size=11, anchor="end", colour=MUTED))
    for value in x_ticks:
        at = frame.x(value)
        if grid == "x":
            parts.append(line(at, frame.top, at, frame.bottom, colour=GRID))
        parts.append(line(at, frame.bottom, at, frame.bottom + 4, colour=MUTED))
        parts.append(text(at, frame.bottom + 13, x_format(value), size=11, anchor="middle", colour=MUTED))
    parts.append(rect(frame.left, frame.top, frame.width, frame.height, stroke="#999999"))
    if x_label:
        parts.append(text(frame.left + frame.width / 2, frame.bottom + 33, x_label, size=12, anchor="middle"))
    if y_label:
        parts.append(text(frame.left - 42, frame.top + frame.height / 2, y_label, size=12, anchor="middle",
                          rotate=-90))
    return "".join(parts)


def hbars(frame: Frame, values: Sequence[float], colours: Sequence[str], labels: Sequence[str] = (),
          titles: Sequence[str | None] = (), value_format: Callable[[float], str] | None = None, size: float = 11,
          band: float = 0.72) -> str:
    """Horizontal bars, the first at the top, one band of the frame's height each; `labels` right-aligned
    left of the frame, `value_format(v)` (if given) written just past each bar's end."""
    count = max(1, len(values))
    pitch = frame.height / count
    parts = []
    for index, value in enumerate(values):
        middle = frame.top + (index + 0.5) * pitch
        end = frame.x(max(frame.x_range[0], min(frame.x_range[1], value)))
        tip = titles[index] if index < len(titles) else None
        parts.append(rect(frame.left, middle - band * pitch / 2, end - frame.left, band * pitch,
                          fill=colours[index % len(colours)], title=tip))
        if index < len(labels):
            parts.append(text(frame.left - 7, middle, labels[index], size=size, anchor="end", title=tip))
        if value_format:
            parts.append(text(end + 4, middle, value_format(value), size=size - 1, colour=MUTED))
    return "".join(parts)


def vbars(frame: Frame, spans: Iterable[tuple[float, float]], values: Iterable[float], colours: Sequence[str],
          titles: Sequence[str | None] = (), gap: float = 1.0) -> str:
    """Vertical bars from y=0: bar k covers spans[k] = (x from, x to) in data units, `gap` pixels
    of white between neighbours."""
    parts = []
    base = frame.y(max(frame.y_range[0], 0))
    for index, ((start, stop), value) in enumerate(zip(spans, values)):
        left, right = frame.x(start), frame.x(stop)
        top = frame.y(min(frame.y_range[1], value))
        tip = titles[index] if index < len(titles) else None
        parts.append(rect(left + gap / 2, top, right - left - gap, base - top,
                          fill=colours[index % len(colours)], title=tip))
    return "".join(parts)


def bin_counts(values: Iterable[float], edges: Sequence[float]) -> list[int]:
    """How many values fall in each bin [edges[k], edges[k+1]) (the last bin also holds its right edge)."""
    counts = [0] * (len(edges) - 1)
    for value in values:
        for k in range(len(counts)):
            if edges[k] <= value < edges[k + 1] or (k == len(counts) - 1 and value == edges[-1]):
                counts[k] += 1
                break
    return counts


def histogram(frame: Frame, edges: Sequence[float], counts: Sequence[int], colour: str, what: str = "values") -> str:
    """A histogram's bars (white gaps between bins), each with a tooltip saying its range and count."""
    spans = list(zip(edges, edges[1:]))
    titles = [f"{count} {what} in [{tick_text(a)}, {tick_text(b)})" for (a, b), count in zip(spans, counts)]
    return vbars(frame, spans, counts, [colour], titles=titles, gap=1.5)


def reference_line(frame: Frame, value: float, colour: str, dash: str = "6 4", vertical: bool = True,
                   width: float = 1.6) -> str:
    """A dashed line across the frame at x=value (vertical) or y=value (horizontal)."""
    if vertical:
        at = frame.x(value)
        return line(at, frame.top, at, frame.bottom, colour=colour, width=width, dash=dash)
    at = frame.y(value)
    return line(frame.left, at, frame.right, at, colour=colour, width=width, dash=dash)


def legend(x: float, y: float, entries: Sequence[LegendEntry], size: float = 11, anchor: str = "end") -> str:
    """A one-line legend whose right end (anchor="end") or left end sits at (x, y).
    entries: (kind, colour, text, dash) with kind "bar", "line" or "dot"."""
    widths = [22 + text_width(label, size) + 14 for _, _, label, _ in entries]
    left = x - sum(widths) if anchor == "end" else x
    parts = []
    for (kind, colour, label, dash), width in zip(entries, widths):
        if kind == "bar":
            parts.append(rect(left, y - 5, 16, 10, fill=colour))
        elif kind == "dot":
            parts.append(circle(left + 8, y, 5, colour))
        else:
            parts.append(line(left, y, left + 16, y, colour=colour, width=2, dash=dash))
        parts.append(text(left + 22, y, label, size=size, colour=INK))
        left += width
    return "".join(parts)
