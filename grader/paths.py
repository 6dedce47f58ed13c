"""Where the kit keeps things: the one place that names the project's folders.

Everything that reads solutions/, tests/ or samples/ takes its path from here
(as nbgrader's `coursedir` does), so a folder is renamed in one place.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
SOLUTION = SOLUTIONS / "attention.py"
CHAPTER_TEXT = SOLUTIONS / "chapter.md"
RELEASE_SOURCES = SOLUTIONS / "release"
# The files students are handed (generated): exercises/, the release's copies (the notebook with its setup cell,
# the checker) and, in the Gradescope zip, starters/. A submitted file whose code is one of these is no work.
STARTERS = tuple(ROOT / folder / name for folder in ("exercises", "student_template/exercises", "starters")
                 for name in ("attention.py", "attention.ipynb")) + (ROOT / "student_template" / "check.py",
                                                                      ROOT / "starters" / "check.py")
TESTS = ROOT / "tests"
SAMPLE_CLASS = ROOT / "samples" / "class"
