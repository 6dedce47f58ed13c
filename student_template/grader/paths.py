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
STARTERS = (ROOT / "exercises" / "attention.py", ROOT / "exercises" / "attention.ipynb")  # as handed out (generated)
TESTS = ROOT / "tests"
SAMPLE_CLASS = ROOT / "samples" / "class"
