"""The markers of solutions/attention.py, read strictly: a malformed marker is an error, never a guess.

`### BEGIN SOLUTION` ... `### END SOLUTION` enclose what students write; each
`# %% step: KEY` line opens the code of one chapter step. An unbalanced or
nested region, or a step the chapter does not know, stops `make student` with
the file and line, instead of silently shipping a solution or losing a stub.
"""

import re
from dataclasses import dataclass

from grader.chapter import BY_KEY
from grader.paths import SOLUTION

BEGIN, END, TODO = "### BEGIN SOLUTION", "### END SOLUTION", "# TODO: Implement"
STEP_MARKER = re.compile(r"^# %% step: (\w+)\s*$")


class MarkerError(ValueError):
    """A malformed marker; the message names the file and line."""


@dataclass(frozen=True)
class Region:
    begin: int  # index of the BEGIN line
    end: int  # index of the END line
    step: str  # the step whose code holds it


def regions(text: str, filename: str = "solutions/attention.py") -> list[Region]:
    """The solution regions of `text`, in order; MarkerError on any malformed marker."""
    found, opened, step = [], None, "setup"
    for index, line in enumerate(text.splitlines()):
        stripped = line.strip()
        marker = STEP_MARKER.match(line)
        where = f"{filename}:{index + 1}"
        if marker:
            if marker[1] not in BY_KEY and marker[1] != "setup":
                raise MarkerError(f"{where}: step {marker[1]!r} is not a step of grader/chapter.py")
            if opened is not None:
                raise MarkerError(f"{where}: a new step starts inside the solution region opened at line "
                                  f"{opened + 1}; close it with {END!r} first")
            step = marker[1]
        elif stripped.startswith(BEGIN):
            if opened is not None:
                raise MarkerError(f"{where}: {BEGIN!r} inside the region opened at line {opened + 1} "
                                  "(regions cannot nest)")
            opened = index
        elif stripped.startswith(END):
            if opened is None:
                raise MarkerError(f"{where}: {END!r} without a {BEGIN!r} before it")
            found.append(Region(opened, index, step))
            opened = None
        elif stripped.startswith("#") and ("BEGIN SOLUTION" in stripped or "END SOLUTION" in stripped):
            raise MarkerError(f"{where}: write the marker exactly as {BEGIN!r} or {END!r} on a line of its own")
    if opened is not None:
        raise MarkerError(f"{filename}:{opened + 1}: {BEGIN!r} is never closed with {END!r}")
    return found


def clean_solution(solution_text: str | None = None) -> str:
    """The solution without markers and TODOs: what a student who finished would have."""
    solution_text = SOLUTION.read_text() if solution_text is None else solution_text
    regions(solution_text)
    return "".join(line for line in solution_text.splitlines(keepends=True)
                   if not line.strip().startswith((BEGIN, END, TODO)))
