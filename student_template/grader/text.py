"""Text that came from a submission, made safe for where it goes: one sanitiser, one helper per destination.

Names and messages can come from student files, LMS download folders (a
student chooses their own display name, and a file name can hold almost any
character) and rosters. Every such name goes through `clean` once, where it
enters the grader: no control characters (a newline or carriage return would
forge a progress line, an ESC would rewrite the terminal), no bidirectional
overrides, no runs of spaces, bounded length. Then, per destination:

  html        inside an HTML or SVG element or a quoted attribute value
  csv_cell    a CSV cell: one that a spreadsheet would run as a formula (=, +, -, @, tab, CR first) is
              neutralised with a leading apostrophe, as OWASP's CSV-injection guidance recommends
  terminal    one line for the terminal or a log: `clean`, so nothing can start a new line
  safe_name   a file name and results key: letters, digits, '.', '-' and '_' only

Nothing else in the grader escapes by hand.
"""

import html as _html
import re
import unicodedata
from collections.abc import Iterable
from typing import TypeVar

MAX_NAME = 200  # characters: longer than any real name, short enough to keep tables readable
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"-?\d+(\.\d+)?")
T = TypeVar("T")


def clean(text: object, limit: int = MAX_NAME) -> str:
    """The one sanitiser for names (and short messages) from outside: printable, one line, bounded.

    Control and format characters (newlines, ESC, NUL, bidi overrides U+202E...) become a space,
    spaces are collapsed, the text is NFC-normalised and cut at `limit` characters with an ellipsis."""
    text = unicodedata.normalize("NFC", str(text))
    kept = "".join(" " if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") else char for char in text)
    kept = " ".join(kept.split())
    return kept if len(kept) <= limit else kept[: limit - 1] + "…"


def html(text: object) -> str:
    """Text safe inside an HTML or SVG element or a quoted attribute value."""
    return _html.escape(str(text), quote=True)


class Verbatim(str):
    """An identifier an LMS import matches its students by, written as the LMS's export gave it where it is a plain
    id (`@00123456`, a Banner id; `+4477`): an apostrophe before it made the import match nobody. A plain id calls
    no function, so a spreadsheet cannot run it; one that could (`=...`, parentheses, pipes, quotes, spaces) is
    guarded like any other cell."""


PLAIN_ID = re.compile(r"[@+\-]?[\w.@\-]*")


def csv_cell(value: T) -> T | str:
    """A cell for a CSV that people open in spreadsheets: text that would start a formula is neutralised.

    Numbers pass unchanged, and so does a lone "-" (Moodle's "no value", which Moodle reads back); any
    other text starting with =, +, -, @, tab or CR gets a leading apostrophe, which spreadsheets show as text."""
    if value is None:
        return ""
    if not isinstance(value, str) or (isinstance(value, Verbatim) and PLAIN_ID.fullmatch(value)):
        return value
    if value.startswith(FORMULA_START) and not NUMBER.fullmatch(value) and value != "-":  # a lone dash: "none"
        return "'" + value
    return value


def csv_row(values: Iterable[T]) -> list[T | str]:
    """A whole row through `csv_cell`."""
    return [csv_cell(value) for value in values]


def terminal(text: object) -> str:
    """One line for the terminal: `clean` without a length limit worth noticing (messages can be long)."""
    return clean(text, limit=4000)


def safe_name(text: object) -> str:
    """A submission's name as a file name and a CSV key: letters, digits, '.', '-' and '_' only.

    Never starts with '-' (an option on a command line, a formula in a spreadsheet) or '.'."""
    return re.sub(r"[^\w.\-]+", "_", clean(text), flags=re.UNICODE).strip("._-") or "submission"
