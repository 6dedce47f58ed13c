"""`make publish`: build everything an instructor uploads into dist/, from solutions/ and tests/, without
ever destroying grading work.

Each part is built by a module with `build(dist: Path) -> list[Path]` (the files it wrote):
  student     dist/student/ and dist/student.zip, the student release (exercises and `python check.py`)
  otter       dist/otter/<name>-autograder.zip, a stock Otter autograder
  gradescope  dist/gradescope/autograder.zip, running the kit's own sandboxed grader
  nbgrader    dist/nbgrader/, an nbgrader course with generate_assignment already run

Every part is built in a staging folder first, then installed file by file:
* the kit's own trees (student/, otter/, gradescope/, and in nbgrader/ the source/ and release/ of the
  assignment, kit_hidden_tests/ and the kit_*.py plugins) are replaced, files they no longer hold removed;
* nbgrader_config.py is replaced only while it is as the kit wrote it (dist/.kit-publish.json records
  what was written); edited by hand, the publish is refused (the instructor's settings go in
  course_config.py, which the config loads and the kit never writes);
* nothing else is written or removed: the gradebook, submitted/, autograded/, feedback/, exports and
  any file the kit did not make stay as they are. An nbgrader course whose assignment's graded cells
  would change while it holds student work is refused (see integrations.nbgrader.plan_course);
* a folder that holds a graded class (results/, grades.csv, class.json) is refused as a target.
A refusal changes nothing and says what would have changed.
"""

import hashlib
import importlib
import json
import logging
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Each part: the module whose `build(dist)` writes it.
BUILDERS = {"student": "grader.build.release", "otter": "grader.integrations.otter",
            "gradescope": "grader.integrations.gradescope", "nbgrader": "grader.integrations.nbgrader"}
PARTS = tuple(BUILDERS)
MANIFEST = ".kit-publish.json"
# The trees each part owns outright, rebuilt on every publish (relative to dist, '/' ends a folder): what
# the part's build writes at the top of dist, plus these (older layouts' names, so their leftovers go);
# the nbgrader course is shared with the instructor, so only these subtrees of it are the kit's.
log = logging.getLogger(__name__)
OWNED = {"student": ("student/", "student.zip", "solutions/"), "otter": ("otter/",), "gradescope": ("gradescope/",),
         "nbgrader": ("nbgrader/source/attention/", "nbgrader/release/attention/", "nbgrader/kit_hidden_tests/",
                      "nbgrader/kit_csv_export.py", "nbgrader/kit_nbgrader.py")}
TOPS = {"nbgrader": ("nbgrader/",)}  # where a part's files live: a recorded, unchanged file there may go
GRADING_OUT = ("results", "grades.csv", "class.json")  # what a graded class folder holds
GRADEBOOK = "nbgrader/gradebook.db"


class PublishRefused(Exception):
    """Publishing would touch grading work or hand-edited files; nothing was changed."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass
class Plan:
    staged: dict[str, Path] = field(default_factory=dict)  # relative path -> staged file: every file the build made
    write: dict[str, Path] = field(default_factory=dict)  # relative path -> staged file, to install
    remove: list[str] = field(default_factory=list)  # relative paths of stale generated files
    refusals: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # files in the kit's folders that no make publish wrote: left
    course: str = ""  # nbgrader: "install", "keep" or "regenerate" the gradebook (see plan_course)


def publish(dist: str | Path, parts: Sequence[str] = PARTS, course_id: str | None = None) -> list[Path]:
    """Build `parts` and install them into `dist`; return the files written. PublishRefused when that would
    touch grading work (nothing is changed then)."""
    dist = Path(dist)
    held = [name for name in GRADING_OUT if (dist / name).exists()]
    if held:
        raise PublishRefused([f"{dist} holds a graded class ({', '.join(held)}): publish into another folder "
                              "(make publish DIST=...); nothing was changed"])
    manifest = read_manifest(dist)
    recorded = manifest.get("settings", {}).get("course_id")
    if "nbgrader" in parts and course_id and recorded and course_id != recorded:
        from grader.integrations.nbgrader import student_work

        work = student_work(dist / "nbgrader")
        if work:  # nbgrader would start a second course row beside the graded one
            raise PublishRefused([f"nbgrader: the course in {dist} is {recorded!r} and holds grading work:"]
                                 + [f"  {line}" for line in work]
                                 + [f"publish course {course_id!r} into another folder (make publish DIST=...), or "
                                    "leave COURSE_ID out; nothing was changed"])
    course_id = course_id or recorded or "attention"
    with tempfile.TemporaryDirectory(prefix="kit-publish-") as folder:
        staging = Path(folder)
        for part in parts:  # each in its own folder, so that what a part wrote is known
            builder = importlib.import_module(BUILDERS[part])
            if part == "nbgrader":
                builder.build(staging / part, course_id=course_id)
            else:
                builder.build(staging / part)
        plan = plan_install(dist, staging, parts, manifest)
        if plan.refusals:
            raise PublishRefused(plan.refusals + ["nothing was changed"])
        written = install(dist, plan)
        for relative in plan.kept:
            log.info(f"kept {dist / relative}: no make publish wrote it (the kit never removes such a file)")
        if "nbgrader" in parts:
            from grader.integrations.nbgrader import finish_course

            if plan.course == "install":
                shutil.copy2(staging / "nbgrader" / GRADEBOOK, dist / GRADEBOOK)
                written.append(dist / GRADEBOOK)
            finish_course(dist / "nbgrader", plan.course)
        files = {relative: value for relative, value in manifest.get("files", {}).items()
                 if relative not in plan.remove}
        files.update({relative: digest(staged) for relative, staged in plan.staged.items()})
    write_manifest(dist, {"files": files, "settings": {**manifest.get("settings", {}), "course_id": course_id}})
    return written


def staged_files(staging: Path, parts: Iterable[str]) -> dict[str, Path]:
    """{relative path: staged file} of every file the parts built (caches left out)."""
    files = {}
    for part in parts:
        for path in sorted((staging / part).rglob("*")):
            relative = path.relative_to(staging / part).as_posix()
            if path.is_file() and "__pycache__" not in path.parts and relative != GRADEBOOK:
                files[relative] = path
    return files


def owned_roots(staging: Path, parts: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """{part: roots it owns}: OWNED, and for every part but nbgrader what its build wrote at the top."""
    roots = {}
    for part in parts:
        built = () if part == "nbgrader" else tuple(
            entry.name + ("/" if entry.is_dir() else "") for entry in sorted((staging / part).iterdir()))
        roots[part] = OWNED[part] + built
    return roots


def under(relative: str, parts: Iterable[str], roots: Mapping[str, tuple[str, ...]]) -> bool:
    """True when `relative` is one of the parts' roots or inside one of their root folders."""
    return any(relative == root or (root.endswith("/") and relative.startswith(root))
               for part in parts for root in roots.get(part, ()))


def plan_install(dist: Path, staging: Path, parts: Sequence[str], manifest: Mapping[str, Any]) -> Plan:
    plan = Plan()
    recorded = manifest.get("files", {})
    plan.staged, roots = staged_files(staging, parts), owned_roots(staging, parts)
    for relative, staged in plan.staged.items():
        target = dist / relative
        if target.is_dir() or any(parent.is_file() for parent in target.parents if dist in parent.parents):
            plan.refusals.append(f"{relative}: a folder or file of that name is in the way")
        elif not target.exists():
            plan.write[relative] = staged
        elif target.read_bytes() == staged.read_bytes():
            continue
        elif under(relative, parts, roots) or recorded.get(relative) == digest(target):
            plan.write[relative] = staged
        else:
            plan.refusals.append(f"{relative}: changed since make publish wrote it (move your settings into "
                                 "nbgrader/course_config.py, which the kit never writes, then publish again)"
                                 if relative.endswith("nbgrader_config.py") else
                                 f"{relative}: not written by make publish, and the new build has one")
    built = set(plan.staged)
    yours = [part for part in parts if part != "nbgrader"]  # where your own files may sit: nbgrader's are the kit's
    for path in sorted(dist.rglob("*")) if dist.is_dir() else []:
        relative = path.relative_to(dist).as_posix()
        if not path.is_file() or relative in built or "__pycache__" in path.parts or relative == GRADEBOOK:
            continue
        recorded_here = (relative in recorded and under(relative, parts, TOPS) and recorded[relative] == digest(path))
        if under(relative, yours, roots) and relative not in recorded:  # your own file beside the kit's: kept
            plan.kept.append(relative)
        elif under(relative, parts, roots) or recorded_here:
            plan.remove.append(relative)
    if "nbgrader" in parts:
        from grader.integrations.nbgrader import plan_course

        course = "nbgrader/"
        code = sorted([f"{relative[len(course):]}: {'changed' if (dist / relative).exists() else 'new'}"
                       for relative in plan.write if grading_code(relative)]
                      + [f"{relative[len(course):]}: removed" for relative in plan.remove if grading_code(relative)])
        plan.course, refusals = plan_course(staging / "nbgrader" / "nbgrader", dist / "nbgrader", code)
        plan.refusals += refusals
    return plan


def grading_code(relative: str) -> bool:
    """Whether a file of the install (relative to dist) is code an nbgrader course grades with: its hidden tests,
    the checks and grader shipped beside the notebook, the kit's plugins (its config is no grading code)."""
    return relative.startswith("nbgrader/") and relative.endswith(".py") and not relative.endswith("_config.py")


def install(dist: Path, plan: Plan) -> list[Path]:
    written = []
    for relative, staged in plan.write.items():
        target = dist / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(staged, target)
        written.append(target)
    for relative in plan.remove:
        (dist / relative).unlink()
    return written


def digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_manifest(dist: str | Path) -> dict[str, Any]:
    try:
        data = json.loads((Path(dist) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_manifest(dist: str | Path, data: Mapping[str, Any]) -> None:
    Path(dist).mkdir(parents=True, exist_ok=True)
    (Path(dist) / MANIFEST).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
