"""Text that came from a submission, made safe for where it goes: one helper per destination.

Names and messages can come from student files, LMS download folders and
rosters. Whatever reaches an HTML page goes through `html`, a file name or
results key through `safe_name`. Nothing else in the grader escapes by hand.
"""

import html as _html
import re


def html(text):
    """Text safe inside an HTML or SVG element or a quoted attribute value."""
    return _html.escape(str(text), quote=True)


def safe_name(text):
    """A submission's name as a file name and a CSV key: letters, digits, '.', '-' and '_' only."""
    return re.sub(r"[^\w.\-]+", "_", text, flags=re.UNICODE).strip("._") or "submission"
