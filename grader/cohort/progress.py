"""Progress of a class run: a bar with counts and ETA on a terminal, plain lines elsewhere (CI logs).

On a terminal the bar is redrawn in place (`\\r`), so it must fit the terminal's
width: a line that wraps leaves its first part behind on every redraw. Every
line drawn there is cut to the width, counted in columns (wide characters take two).
"""

import os
import sys
import threading
import time
import unicodedata
from typing import TextIO


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


def columns_of(char: str) -> int:
    """Terminal columns a character takes: 2 for wide East Asian ones, 0 for combining marks."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def fit(text: str, width: int) -> str:
    """`text` cut to `width` terminal columns, ending with '…' when it was cut."""
    if sum(map(columns_of, text)) <= width:
        return text
    kept, used = [], 0
    for char in text:
        used += columns_of(char)
        if used > width - 1:
            break
        kept.append(char)
    return "".join(kept) + "…"


def terminal_width(stream: TextIO, fallback: int = 80) -> int:
    """Columns of the terminal behind `stream` (read at each redraw: terminals get resized)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or fallback
    except (AttributeError, OSError, ValueError):
        return fallback


class Progress:
    def __init__(self, total: int, skipped: int = 0, stream: TextIO | None = None, width: int = 28) -> None:
        self.stream = stream or sys.stderr
        self.total, self.done, self.skipped = total, skipped, skipped
        self.width = width
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.terminal = hasattr(self.stream, "isatty") and self.stream.isatty()
        if skipped:
            self._line(f"resuming: {skipped} of {total} already graded and unchanged")

    def _fit(self, text):
        # One column short of the width: a line that fills the last column wraps on some terminals.
        return fit(text, terminal_width(self.stream) - 1)

    def _line(self, text):
        if self.terminal:
            self.stream.write("\r\033[K" + self._fit(text) + "\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def eta(self) -> float | None:
        graded = self.done - self.skipped
        if graded <= 0:
            return None
        return (time.monotonic() - self.started) / graded * (self.total - self.done)

    def advance(self, name: str, score: float, maximum: float, seconds: float, note: str = "") -> None:
        with self.lock:
            self.done += 1
            eta = self.eta()
            left = f"ETA {clock(eta)}" if eta is not None else "ETA ?"
            if self.terminal:
                columns = terminal_width(self.stream) - 1
                bar_width = max(0, min(self.width, columns // 4))  # a narrow terminal keeps room for the name
                filled = int(bar_width * self.done / max(self.total, 1))
                bar = f"[{'#' * filled}{'.' * (bar_width - filled)}] " if bar_width else ""
                self.stream.write("\r\033[K" + fit(f"{bar}{self.done}/{self.total} {left}  {name}: "
                                                    f"{score:g}/{maximum:g}" + (f" ({note})" if note else ""), columns))
                self.stream.flush()
            else:
                self._line(f"[{self.done}/{self.total}] graded {name}: {score:g}/{maximum:g} in {seconds:.1f}s, "
                           f"{left}" + (f" ({note})" if note else ""))

    def finish(self) -> None:
        if self.terminal:
            self.stream.write("\n")
            self.stream.flush()
