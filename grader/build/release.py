"""`make publish`'s student part: dist/student.zip, the one student download, and dist/solutions/.

* dist/student.zip is `student_template/` exactly as `make student` generates it (under a top
  folder `student/`): the exercises, whose notebook carries the checker's cells (see
  `grader.build.exercises.with_checks`), and the checker with the public tests. Nothing else:
  the notebook needs no Otter or nbgrader to run its checks, and Otter's autograder grades it
  as it is (its setup and check cells are skipped when graded).
* dist/solutions/ is the answer key for staff, laid out as the release: copying it over an
  unzipped release (`cp -r dist/solutions/. student/`) solves it, notebook and .py alike, so the
  release can be tested end to end (`python check.py` passes every step).
"""

import time
import zipfile
from pathlib import Path

from grader.build.exercises import clean_solution, code_sections, generated_files, notebook, with_checks
from grader.paths import SOLUTION

TEMPLATE = "student_template/"
TOP_FOLDER = "student"  # what unzipping student.zip creates


def release_files():
    """{relative path: text} of the student release (student_template/ as generated)."""
    return {relative[len(TEMPLATE):]: text for relative, text in generated_files().items()
            if relative.startswith(TEMPLATE)}


def solution_files():
    """{relative path: text}: the solved exercises, at their places in the release."""
    clean = clean_solution(SOLUTION.read_text())
    return {"exercises/attention.py": clean, "exercises/attention.ipynb": with_checks(notebook(code_sections(clean)))}


def write_tree(root, files):
    written = []
    for relative, text in sorted(files.items()):
        target = Path(root) / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written.append(target)
    return written


def build(dist):
    """Write dist/student.zip and dist/solutions/; return the paths written."""
    dist = Path(dist)
    dist.mkdir(parents=True, exist_ok=True)
    archive_path = dist / "student.zip"
    with zipfile.ZipFile(archive_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for relative, text in sorted(release_files().items()):
            member = zipfile.ZipInfo(f"{TOP_FOLDER}/{relative}", date_time=time.localtime()[:6])
            member.external_attr = 0o644 << 16  # rw-r--r-- once unzipped (the default is no permission at all)
            archive.writestr(member, text, compress_type=zipfile.ZIP_DEFLATED)
    return [archive_path, *write_tree(dist / "solutions", solution_files())]
