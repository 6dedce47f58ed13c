"""`make publish`: build everything an instructor uploads into dist/, from solutions/ and tests/.

Each part is built by a module with `build(dist: Path) -> list[Path]` (the files it wrote):
  student     dist/student/ and dist/student.zip, the student release with Otter self-checks
  otter       dist/otter/<name>-autograder.zip, a stock Otter autograder
  gradescope  dist/gradescope/autograder.zip, running the kit's own sandboxed grader
  nbgrader    dist/nbgrader/, an nbgrader course with generate_assignment already run
"""

import importlib
import shutil
from pathlib import Path

# Each part: the module whose `build(dist)` writes it.
BUILDERS = {"student": "grader.build.release", "otter": "grader.integrations.otter",
            "gradescope": "grader.integrations.gradescope", "nbgrader": "grader.integrations.nbgrader"}
PARTS = tuple(BUILDERS)


def publish(dist, parts=PARTS):
    """Build the parts into `dist` (emptied first when every part is built); return the files written."""
    dist = Path(dist)
    if tuple(parts) == PARTS and dist.exists():
        shutil.rmtree(dist)
    dist.mkdir(parents=True, exist_ok=True)
    written = []
    for part in parts:
        written.extend(importlib.import_module(BUILDERS[part]).build(dist))
    return written
