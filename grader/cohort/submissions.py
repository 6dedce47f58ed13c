"""Turn the PATH given to `grade` into named submission files: a file, a folder or a zip."""

import functools
import os
import re
import stat
import struct
import tempfile
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.chapter import STEPS
from grader.check.loader import MAX_NOTEBOOK_BYTES, SubmissionError, read_chunks
from grader.cohort import lms_names
from grader.errors import UsageError
from grader.paths import SOLUTION, STARTERS
from grader.text import clean, safe_name

SUFFIXES = (".py", ".ipynb")
MAX_ZIP_TOTAL = 200 * 1024 * 1024
MAX_ZIP_MEMBER = MAX_NOTEBOOK_BYTES  # a notebook saved with its plots; the loader bounds the code inside
MAX_ZIP_RATIO = 200
MAX_ZIP_MEMBERS = 20_000


@dataclass
class Collected:
    submissions: list[tuple[str, Path]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # files that were not graded, and why
    # (name, message): a student whose only file cannot be graded
    rejected: list[tuple[str, str]] = field(default_factory=list)
    # submission name -> its LMS origin (LMS downloads only; keyed by path while collecting)
    origins: dict[Any, lms_names.Origin] = field(default_factory=dict)
    temporary: tempfile.TemporaryDirectory | None = None
    unpacked_not: dict[Path, str] = field(default_factory=dict)  # zip member's Path -> why it could not be unpacked
    source: Path | None = None  # what was collected: a file, a folder or a zip

    def cleanup(self) -> None:
        if self.temporary is not None:
            self.temporary.cleanup()

    def labels(self) -> dict[str, str]:
        """{name: what it was made from}: the folder or file name as the class spells it (`sean o'brien` for
        sean_o_brien), where a name was cleaned from one (an LMS names by ids: none). Two students whose names
        clean alike take one name in turn: the label tells them apart from one grade to the next."""
        found = {}
        for name, path in self.submissions:
            plain = re.sub(r"-\d+$", "", name)
            for candidate in (BROWSER_COPY.sub("", Path(path).stem), *(parent.name for parent in Path(path).parents)):
                if candidate and safe_name(candidate) in (name, plain):
                    found[name] = unicodedata.normalize("NFC", candidate)
                    break
        return found

    def where(self, path: Path) -> str:
        """`path` as the instructor knows it: a zip's member as `class.zip: its/name.py`, never the temporary
        folder it was unpacked to (gone once the command ends)."""
        if self.temporary is not None and self.source is not None:
            try:
                return f"{self.source}: {Path(path).relative_to(self.temporary.name).as_posix()}"
            except ValueError:
                pass
        return str(path)


def collect(path: str | Path, zip_encoding: str | None = None) -> Collected:
    """Submissions under `path`: a file, a folder or a zip of a class, read by its structure (see
    `_collect_folder`) whatever folders wrap it.

    `zip_encoding`: the code page for zip member names that are neither flagged UTF-8 nor valid UTF-8
    (default cp437, the ZIP standard's; see `member_name`)."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path} does not exist; give a .py, .ipynb, a folder of them or a .zip")
    collected = Collected(source=path)
    try:
        _collect_path(path, collected, zip_encoding)
    except UsageError:
        collected.cleanup()
        raise
    collected.submissions = _named_apart(collected.submissions, collected.problems)
    by_path = collected.origins  # filled by path while collecting; keyed by final name from here on
    collected.origins = {name: by_path[path] for name, path in collected.submissions if path in by_path}
    graded = {name for name, _ in collected.submissions}
    rejected: dict[str, str] = {}
    for name, why in collected.rejected:
        if name not in graded:
            rejected.setdefault(name, why)
    collected.rejected = list(rejected.items())
    if not collected.submissions and len(collected.rejected) > 1 and all(
            NESTED_ZIP in why for _, why in collected.rejected):
        collected.cleanup()  # every student a zip in the zip: a layout to unpack, not a class of zeros
        some = ", ".join(clean(name) for name, _ in collected.rejected[:3])
        raise UsageError(f"{path} holds one zip per student ({some}{', ...' if len(collected.rejected) > 3 else ''}) "
                         "and no code: unzip each into a folder "
                         "named by it (for f in *.zip; do unzip -d \"${f%.zip}\" \"$f\"; done) and grade the folder "
                         "that holds them")
    return collected


def _collect_path(path, collected, zip_encoding):
    if path.is_file() and path.suffix == ".zip":
        collected.temporary = tempfile.TemporaryDirectory(prefix="grade-zip-")
        folder = Path(collected.temporary.name)
        _extract(path, folder, collected, zip_encoding or DEFAULT_ZIP_ENCODING)
        _collect_folder(folder, collected)
    elif path.is_file():
        if path.suffix not in SUFFIXES:
            raise UsageError(f"{path} is not a .py, .ipynb or .zip file")
        collected.submissions.append((safe_name(path.stem), path))
    elif path.is_dir():
        _collect_folder(path, collected)
    else:
        raise UsageError(f"{path} is neither a file nor a folder")


def _spelling(path, others):
    """Where `path` prints like another of `others` (one name in two Unicode forms: macOS writes accents as
    combining marks), which form this one is: the note would otherwise name two files that look the same."""
    if not any(unicodedata.normalize("NFC", str(other)) == unicodedata.normalize("NFC", str(path)) for other in others):
        return ""
    form = "precomposed" if unicodedata.is_normalized("NFC", str(path)) else "combining (as macOS writes names)"
    return f" (this one's name is spelt with {form} accents; the other prints alike)"


def _named_apart(entries, problems):
    """Give every submission its own name, so that none overwrites another's results.

    `alice.py` and `alice.ipynb` become `alice.py` and `alice.ipynb`; two folders
    that normalise to the same safe name (`alice smith/`, `alice_smith/`) become
    `alice_smith` and `alice_smith-2`: the plain name goes to the one spelt so already (a
    newcomer `alice smith/` that sorts first must not take `alice_smith`'s grade row, page and
    overrides), then in the order they were found. Names are compared without case: `Alice`
    and `alice` would be one results file where the file system folds case (macOS, Windows)."""
    groups: dict[str, list[str]] = {}
    for name, path in entries:
        groups.setdefault(name.casefold(), []).append(path.suffix)
    seen, given = set(), {}
    spelt_so = sorted(range(len(entries)), key=lambda index: entries[index][0] not in (
        entries[index][1].stem, entries[index][1].parent.name))
    for index in spelt_so:
        name, path = entries[index]
        unique, group = name, groups[name.casefold()]
        if len(group) > 1:
            if group.count(path.suffix) == 1:
                unique = f"{name}{path.suffix}"
            base, number = unique, 2
            while unique.casefold() in seen or (unique != name and unique.casefold() in groups):
                unique, number = f"{base}-{number}", number + 1
            if unique != name:
                spelt = _spelling(path, [other for other_name, other in entries
                                         if other_name.casefold() == name.casefold() and other != path])
                problems.append(f"{path}: another submission is also named {name!r}; graded as {unique!r}{spelt}")
        seen.add(unique.casefold())
        given[index] = unique
    return [(given[index], path) for index, (_, path) in enumerate(entries)]


# --- whose file is it: the structure of a class folder ------------------------------------------------------------
EXERCISE = SOLUTION.stem  # the name of the file students are given ("attention")
NESTED_ZIP = "is a zip inside the zip"  # a member's reason, and how `collect` tells a zip of zips
EXERCISE_NAMES = frozenset(name for step in STEPS for name in step.names)
# The mark a copy of a file gets: Canvas renames a resubmitted `attention.py` `attention-1.py`, `-2`... `-7`, then
# `-<uuid>` (Attachment.make_unique_filename); a browser saves a second download as `attention (1).py`.
COPY_MARK = re.compile(r"(?:-(?P<dash>\d+)| ?\((?P<paren>\d+)\)"
                       r"|-(?P<uuid>[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}))$", re.IGNORECASE)
CANVAS_LAST_NUMBERED_COPY = 7  # after `-7` Canvas gives up numbering and appends a uuid


class _Tree:
    """Where the code files of a folder are: per folder (a tuple of names below the top), the code files
    directly in it and its subfolders holding code, at any depth. Files that could not be unpacked from a
    zip count too: they still say whose folder is whose."""

    def __init__(self, files):
        self.direct: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
        self.folders: dict[tuple[str, ...], set[str]] = {}
        for parts in files:
            for depth in range(len(parts) - 1):
                self.folders.setdefault(parts[:depth], set()).add(parts[depth])
            self.direct.setdefault(parts[:-1], []).append(parts)

    def files(self, prefix):
        return sorted(self.direct.get(prefix, []))

    def subfolders(self, prefix):
        return sorted(self.folders.get(prefix, ()))

    def under(self, prefix):
        """Every code file below `prefix`, at any depth."""
        return self.files(prefix) + [parts for sub in self.subfolders(prefix) for parts in self.under(prefix + (sub,))]


def _code_files(top, collected):
    """The code files under `top` (not hidden, not links, not in `__MACOSX`-like folders) and the zip
    members that could not be unpacked, as tuples of names below `top`."""
    found: set[tuple[str, ...]] = set()
    for folder, folders, files in os.walk(top):
        folders[:] = [name for name in folders if not name.startswith((".", "__"))
                      and not os.path.islink(os.path.join(folder, name))]
        below = Path(folder).relative_to(top).parts
        found.update(below + (name,) for name in files if Path(name).suffix in SUFFIXES
                     and not name.startswith((".", "__")) and not os.path.islink(os.path.join(folder, name)))
    for path in collected.unpacked_not:
        parts = path.relative_to(top).parts
        if not any(part.startswith((".", "__")) for part in parts):
            found.add(parts)
    return found


def _copy_of(filename):
    """(the name the file had before it was copied, which copy it is: 0 for the original, higher for later)."""
    stem = Path(filename).stem
    match = COPY_MARK.search(stem)
    if not match:
        return stem, 0
    number = match["dash"] or match["paren"]
    return stem[:match.start()], int(number) if number else CANVAS_LAST_NUMBERED_COPY + 1


def _exercise_named(filename):
    return _copy_of(filename)[0].casefold() == EXERCISE.casefold()


# Why a student's file was graded before the next, by the first part of `_rank` that told them apart
RANK_REASONS = ("the other is a file as handed out, unchanged",
                "the other defines none of the exercise's functions and classes", "the exercise's file",
                "the exercise's exact name", "a .py before a notebook", "the latest upload", "the latest copy", None)


def _rank(filename, file_id=0, path=None):
    """Sort key of one student's code files, the one graded first: not the starter file as handed out (a student
    who uploaded it beside their notebook did their work in the notebook), the exercise's file (any case, any
    copy mark), under its exact name before another case (`attention.py` before `Attention.py`), a .py before a
    notebook, then the latest: the highest file id where the LMS numbers uploads (Canvas's ids only grow),
    else the highest copy (`attention-2.py` after `attention-1.py` after `attention.py`). A file that defines
    none of the exercise's names (a helper uploaded after the work) comes after one that does, whatever its id."""
    base, copy = _copy_of(filename)
    return (path is not None and as_handed_out(path), path is not None and defines_no_exercise_name(path),
            base.casefold() != EXERCISE.casefold(), base != EXERCISE, Path(filename).suffix != ".py", -file_id, -copy,
            filename)


def graded_first(paths: list[Path], top: Path) -> list[Path]:
    """One student's code files (below `top`), the one to grade first: as `_rank` orders them, then the shallowest.
    The Gradescope autograder picks with this too, so that it and `make grade` grade the same file."""
    if len(paths) < 2:
        return list(paths)
    return sorted(paths, key=lambda path: (_rank(path.name, path=path)[:-1], len(path.relative_to(top).parts),
                                           str(path)))


def graded_first_note(paths: list[Path], top: Path) -> str | None:
    """What `make grade` tells about one student's several code files (`graded X (why), not Y`), for the
    Gradescope autograder, which grades one file of an upload as `graded_first` picks it; None for one file."""
    ranked = graded_first(paths, top)
    if len(ranked) < 2:
        return None
    return _graded_note("your submission", [(clean(str(path.relative_to(top))), _rank(path.name, path=path))
                                            for path in ranked])


def _code_text(path):
    """A file's code, as the loader splits it (a notebook's code cells), each line's end spaces left out."""
    return "\n".join(line.rstrip() for chunk in read_chunks(path) for line in chunk.source.splitlines())


@functools.cache
def _starter_codes():
    codes = set()
    for starter in STARTERS:
        try:
            codes.add(_code_text(starter))
        except (OSError, ValueError, SubmissionError):  # not there (an autograder holds no exercises/): no starter
            pass
    return codes


def as_handed_out(path: Path) -> bool:
    """True for a file whose code is one of the files students are handed, unchanged (paths.STARTERS: the stub,
    its notebook, the checker), compared and never run."""
    try:
        return _code_text(path) in _starter_codes()
    except (OSError, ValueError, SubmissionError):
        return False


# `def causal_mask(`, `class CausalAttention(`, `CausalAttention = ...` at the start of a line: an exercise name
# defined, read in the file's code (never run; a file with a syntax error is read as well).
_DEFINES = re.compile(r"^[ \t]*(?:(?:async[ \t]+)?def|class)[ \t]+(\w+)|^(\w+)[ \t]*(?::[^=\n]*)?=(?!=)", re.MULTILINE)


def defines_no_exercise_name(path: Path) -> bool:
    """True for a file whose code defines none of the chapter's functions and classes (grader.chapter): a helper or
    notes beside the work. So is a file that cannot be read: graded, it could only be a zero that says why."""
    try:
        code = _code_text(path)
    except (OSError, ValueError, SubmissionError):
        return True
    return not any((match[1] or match[2]) in EXERCISE_NAMES for match in _DEFINES.finditer(code))


def _graded_note(label, ranked):
    """`label: several code files; graded X (why), not Y, Z` for [(shown name, `_rank` key)], graded first."""
    (first, key), (_, runner_up) = ranked[0], ranked[1]
    told_apart = next((index for index, (a, b) in enumerate(zip(key, runner_up)) if a != b), -1)  # -1: same name
    reason = RANK_REASONS[told_apart]
    if reason == "the latest upload":
        reason += f": Canvas file id {-key[RANK_REASONS.index(reason)]}"
    return (f"{label}: several code files; graded {first}{f' ({reason})' if reason else ''}, not "
            + ", ".join(name for name, _ in ranked[1:]))


def _lms_download(tree, top, prefix):
    """True when the folder `prefix` is laid out as an LMS download: a Gradescope export's metadata,
    Canvas or flat Moodle file names, Moodle's per-student folders."""
    if (top.joinpath(*prefix) / lms_names.GRADESCOPE_METADATA).is_file():
        return True
    if any(lms_names.parse_moodle_folder(name) for name in tree.subfolders(prefix)):
        return True
    return any(lms_names.parse_canvas_name(parts[-1]) or lms_names.parse_moodle_file(parts[-1])
               for parts in tree.files(prefix))


def _holds_a_class(tree, top, prefix):
    """True when the folder `prefix` holds several students' work, or an LMS download; False when it may
    be one student's folder (one exercise file, or a few files one of which is the exercise's)."""
    if len(tree.subfolders(prefix)) > 1 or _lms_download(tree, top, prefix):
        return True
    return _several_works(tree.files(prefix))  # a teacher's alice.py, bob.py


def _several_works(files):
    """True for code files that cannot all be one student's one piece of work: several names, none of
    them the exercise's (`alice.py`, `bob.ipynb`; but `attention.py` with `helpers.py`, or `lab3.py` with
    `lab3.ipynb`, are one student's)."""
    stems = {Path(parts[-1]).stem for parts in files}
    return len(stems) > 1 and not any(_exercise_named(parts[-1]) for parts in files)


def _class_root(tree, top):
    """The folder the class starts at: below every folder that only wraps it (a zip's single top folder,
    `Submissions/Week 3/`), whatever their number, so that its students are not taken for one. A chain
    of folders around one student's file ends at the folder that holds it: that folder is the student."""
    def metadata(prefix):
        return (top.joinpath(*prefix) / lms_names.GRADESCOPE_METADATA).is_file()

    if metadata(()) or tree.files(()) or len(tree.subfolders(())) != 1:
        return ()
    end: tuple[str, ...] = (tree.subfolders(())[0],)
    while not metadata(end) and not tree.files(end) and len(tree.subfolders(end)) == 1:
        end += (tree.subfolders(end)[0],)
    return end if _holds_a_class(tree, top, end) else end[:-1]


def _collect_folder(top, collected):
    """Submissions of the class under `top`: a folder of files (one per student), one folder per student,
    or an LMS download (Canvas, Moodle, Gradescope; named by `_name_by_lms`), under any number of folders
    that only wrap it. Two students are never graded as one: a student folder whose code lies in several
    folders is graded apart, folder by folder (`_student`), and said."""
    tree = _Tree(_code_files(top, collected))
    root = _class_root(tree, top)
    for depth in range(len(root) + 1):  # what the class root and the folders wrapping it hold besides code
        _note_not_code(top, root[:depth], tree, collected, keep=root[depth] if depth < len(root) else None)
    folder = top.joinpath(*root)
    files = []
    for parts in tree.files(root):
        path = top.joinpath(*parts)
        if path in collected.unpacked_not:
            collected.rejected.append((_owner(parts[-1]), collected.unpacked_not[path]))
        else:
            files.append(path)
    if _lms_download(tree, top, root):  # the LMS's names say whose each file is (_name_by_lms)
        collected.submissions += [(safe_name(path.stem), path) for path in files]
    else:
        _one_per_student(files, folder, collected)
    export = (folder / lms_names.GRADESCOPE_METADATA).is_file()
    for name in tree.subfolders(root):
        if export or lms_names.parse_moodle_folder(name):  # the LMS says whose: one student's, whatever it holds
            _choose(top, tree.under(root + (name,)), _student_name(name), collected, clean(name))
        else:
            _student(tree, top, root + (name,), _student_name(name), collected, clean(name))
    _name_by_lms(folder, collected)
    _reject_uploads_without_code(folder, collected)


BROWSER_COPY = re.compile(r" \(\d+\)$")  # `bob (1).py`: a browser's second download of `bob.py`


def _one_per_student(files, folder, collected):
    """A teacher's folder of one file per student: `bob.py` beside `bob (1).py` (a browser's second download) or
    `bob.ipynb` is one student's, graded as their own folder would be (`graded_first`: the latest copy, a .py before
    a notebook) and said; before, each became a student of its own (`bob_1`) and the LMS files took one of them.
    Only a browser's copy mark and the suffix join files: `team-1.py` and `team-2.py` may be two teams."""
    groups: dict[str, list[Path]] = {}
    for path in files:
        groups.setdefault(BROWSER_COPY.sub("", path.stem), []).append(path)
    for base, group in groups.items():
        ranked = graded_first(group, folder)
        collected.submissions.append((safe_name(base), ranked[0]))
        if len(ranked) > 1:
            collected.problems.append(_graded_note(clean(base), [(clean(path.name), _rank(path.name, path=path))
                                                                 for path in ranked]))


def _reject_uploads_without_code(folder, collected):
    """Students of a Canvas or Moodle download whose upload holds no code (a zip, a PDF, a folder of other
    files): a zero that says what was handed in. Skipped in silence, they were shown as "did not submit", and the
    LMS files left their cells empty."""
    named = {name for name, _ in collected.submissions} | {name for name, _ in collected.rejected}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith((".", "__")) or entry.is_symlink():
            continue
        owner = None
        if entry.is_file() and entry.suffix not in SUFFIXES:
            canvas, moodle = lms_names.parse_canvas_name(entry.name), lms_names.parse_moodle_file(entry.name)
            owner = canvas.name if canvas else moodle.name if moodle and moodle.plugin == "file" else None
        elif entry.is_dir():
            moodle = lms_names.parse_moodle_folder(entry.name)
            owner = moodle.name if moodle and moodle.plugin == "file" else None
        if owner and owner not in named:
            named.add(owner)
            collected.rejected.append((owner, f"{clean(entry.name)} was handed in: not a .py or .ipynb file, so "
                                              "nothing could be graded. Submit the exercise's .py or notebook itself"))


def _student_name(folder_name):
    moodle = lms_names.parse_moodle_folder(folder_name)
    return moodle.name if moodle else safe_name(folder_name)


def _student(tree, top, prefix, name, collected, label):
    """One student's folder: the code of one folder is theirs (`_choose`). Code in several folders (two
    students in a `Week 3/` folder, or one student's versions), or files that cannot be one piece of work
    (`alice.py` and `bob.py`), are graded apart, each under its own name, and said: never merged into one
    grade. An LMS download in a student's place is refused: its files are named by student only when it
    is graded on its own."""
    node = prefix
    while not tree.files(node) and len(tree.subfolders(node)) == 1:  # `submission_502/work/attention.ipynb`
        node += (tree.subfolders(node)[0],)
    files, subfolders = tree.files(node), tree.subfolders(node)
    if _lms_download(tree, top, node) and (len(files) > 1 or subfolders):
        where = "unzip the zip and grade that folder" if collected.temporary else f"grade {top.joinpath(*node)}"
        raise UsageError(f"{label} is an LMS download (Canvas, Moodle or Gradescope) beside other folders: its "
                         f"students are named by the LMS only when it is graded on its own; {where} by itself")
    apart = _several_works(files)
    if not subfolders and not apart:
        _choose(top, files, name, collected, label)
        return
    units: list[tuple[str, Any, Any]] = []  # (name, its files, or the folder to read as a student)
    if apart:
        units += [(f"{name}-{safe_name(Path(parts[-1]).stem)}", [parts], None) for parts in files]
    elif files:
        units.append((name, files, None))
    units += [(f"{name}-{safe_name(sub)}", None, node + (sub,)) for sub in subfolders]
    what = (f"{len(files)} code files of different names, none of them the exercise's"
            + (f", and code in {len(subfolders)} folder(s)" if subfolders else "")) if apart else \
        f"code files in {len(units)} folders"
    collected.problems.append(f"{label}: {what}; graded apart as {', '.join(unit[0] for unit in units)}, so that two "
                              "students are never graded as one (if they are one student's versions, keep one and "
                              "regrade)")
    for unit_name, unit_files, folder in units:
        if folder is None:
            _choose(top, unit_files, unit_name, collected, label)
        else:
            _student(tree, top, folder, unit_name, collected, f"{label}/{clean(folder[-1])}")


def _choose(top, files, name, collected, label):
    """The file graded for a student among the code files of their folder, as `_rank` orders them (the
    exercise's file under its exact name, a .py before a notebook, the latest copy), and which one and why
    is said when there were several."""
    # (a lone file is graded whatever it holds: only among several is any read, to pass over one as handed out)
    keys = {parts: _rank(parts[-1], path=top.joinpath(*parts) if len(files) > 1 else None) for parts in files}
    ranked = sorted(files, key=keys.__getitem__)
    path = top.joinpath(*ranked[0])
    if path in collected.unpacked_not:
        collected.rejected.append((name, collected.unpacked_not[path]))
    else:
        collected.submissions.append((name, path))
    if len(ranked) > 1:
        collected.problems.append(_graded_note(label, [(clean(parts[-1]), keys[parts]) for parts in ranked]))


def _note_not_code(top, prefix, tree, collected, keep=None):
    """Notes for what a folder of the class's top levels holds besides code: links, other files, folders
    without code (`keep`: the folder the class goes on in)."""
    folder = top.joinpath(*prefix)
    if not folder.is_dir():  # only files that could not be unpacked were there
        return
    holding = set(tree.subfolders(prefix))
    for entry in sorted(folder.iterdir()):
        label = clean("/".join(prefix + (entry.name,)))
        if entry.name.startswith((".", "__")) or entry.name in (keep, lms_names.GRADESCOPE_METADATA):
            continue
        if entry.is_symlink():  # it could point anywhere: at another student's file, or the hidden tests
            collected.problems.append(f"{label}: a symbolic link; skipped, since it could point anywhere (put the "
                                      "file itself in the class's folder: cp -L copies what a link points to)")
        elif entry.is_dir() and entry.name not in holding:
            collected.problems.append(_not_code_note(entry)
                                      or f"{label}: no .py or .ipynb file inside; nothing to grade")
        elif entry.is_file() and entry.suffix not in SUFFIXES:
            collected.problems.append(_not_code_note(entry) or f"{label}: not a .py or .ipynb file; skipped")


def _name_by_lms(folder, collected):
    """Name each submission by its student in an LMS download (Canvas, Moodle, Gradescope; see lms_names),
    and keep where it came from in `collected.origins` (by path until `collect` re-keys it by name)."""
    metadata = folder / lms_names.GRADESCOPE_METADATA
    if metadata.is_file():  # one folder per submission; the metadata says whose
        try:
            people = lms_names.gradescope_submitters(metadata)
        except Exception as error:  # noqa: BLE001 - a damaged file must not stop the grading
            collected.problems.append(f"{metadata.name} cannot be read ({error}); folders keep their names")
            return
        names = {safe_name(key): lms_names.gradescope_name(who) for key, who in people.items() if who}
        origins = {safe_name(key): lms_names.gradescope_origin(who) for key, who in people.items() if who}

        def renamed(name):  # `submission_501`, or `submission_501-work` for a folder graded apart
            key = next((key for key in names if name == key or name.startswith(f"{key}-")), None)
            return names[key] + name[len(key):] if key else name

        for name, path in collected.submissions:
            if name in origins:
                collected.origins[path] = origins[name]
        collected.submissions = [(renamed(name), path) for name, path in collected.submissions]
        collected.rejected = [(renamed(name), why) for name, why in collected.rejected]
        return
    top_level = [path.name for _, path in collected.submissions if path.parent == folder]
    canvas = lms_names.resolve_canvas(top_level)
    parsed = {path: _lms_entry(folder, path, canvas) for _, path in collected.submissions}
    kinds = {entry[0] for entry in parsed.values() if entry}
    if not parsed or not all(parsed.values()) or len(kinds) != 1:
        return  # not (only) an LMS download: every file keeps its own name
    for key, students in lms_names.canvas_clashes(canvas).items() if kinds == {"canvas"} else ():
        collected.problems.append(f"Canvas user id {key} is claimed by files of {len(students)} names "
                                  f"({', '.join(sorted(clean(name) for name in students))}): each is graded on "
                                  "its own; check whose they are before uploading grades")
    # the student (LMS id and name) -> their files (an upload of several files, or resubmitted names)
    files: dict[tuple[str, str], list[Any]] = {}
    for path, (_, name, origin) in parsed.items():
        files.setdefault((origin.key, origin.student), []).append((name, origin, path))
    named = []
    for group in files.values():
        several = len(group) > 1  # (as in _choose: a lone file is not read)
        ranked = sorted(((_rank(origin.original, _file_id(canvas, folder, path), path if several else None), name,
                          origin, path) for name, origin, path in group), key=lambda item: item[0])
        _, name, origin, path = ranked[0]
        named.append((name, path))
        collected.origins[path] = origin
        if len(ranked) > 1:
            collected.problems.append(_graded_note(name, [(item[2].original, item[0]) for item in ranked]))
    collected.submissions = named


def _file_id(canvas_files, folder, path):
    """The id Canvas gave a top-level file of its download (it numbers every upload in order), else 0."""
    canvas = canvas_files.get(path.name) if path.parent == folder else None
    return int(canvas.submission_id) if canvas else 0


def _lms_entry(folder, path, canvas_files):
    """(lms, submission name, Origin) for a file of a Canvas or Moodle download, else None; `canvas_files`:
    the download's top-level files as lms_names.resolve_canvas read them."""
    top = path.relative_to(folder).parts[0]
    if path.parent == folder:
        canvas = canvas_files.get(path.name)
        if canvas:
            return "canvas", canvas.name, canvas.origin()
        moodle = lms_names.parse_moodle_file(path.name)
        if moodle:
            return "moodle", moodle.name, moodle.origin()
        return None
    moodle = lms_names.parse_moodle_folder(top)
    if moodle:
        return "moodle", moodle.name, moodle.origin(original=path.name)
    return None


def _not_code_note(entry):
    """Why an LMS entry without code is skipped: online text is expected, other files are not."""
    moodle = lms_names.parse_moodle_folder(entry.name) or lms_names.parse_moodle_file(entry.name)
    if moodle and moodle.plugin != "file":
        return (f"{clean(entry.name)}: Moodle {moodle.plugin} of {clean(moodle.student)} ignored "
                "(the kit grades code files)")
    if entry.is_file() and lms_names.canvas_online_entry(entry.name):
        return f"{clean(entry.name)}: a Canvas online text or URL entry, ignored (the kit grades code files)"
    return None


def _owner(filename):
    """The student a file at the top of a class belongs to: named as an LMS download names them (a Canvas
    or flat Moodle file), else by the file's own name."""
    lms = lms_names.parse_canvas_name(filename) or lms_names.parse_moodle_file(filename)
    return lms.name if lms else safe_name(Path(filename).stem)


DEFAULT_ZIP_ENCODING = "cp437"  # what the ZIP standard (APPNOTE 4.4.4) says unflagged names are
UTF8_FLAG = 0x800  # general purpose bit 11: the name is UTF-8
UNICODE_PATH_EXTRA = 0x7075  # Info-ZIP's field: a UTF-8 copy of the name, with the CRC of the one it replaces


def member_name(info: zipfile.ZipInfo, encoding: str = DEFAULT_ZIP_ENCODING) -> tuple[str, bool]:
    """(name, guessed) for a zip member: its name decoded the way its writer meant.

    Flagged UTF-8: as is. Otherwise Info-ZIP's Unicode Path field when present and current; else the raw
    bytes as UTF-8 when they are valid UTF-8 (rubyzip, which writes Canvas's downloads, and many other
    tools write UTF-8 without setting the flag); else `encoding` (Windows' built-in zip writes the OEM code
    page of its locale: cp437, cp850, cp866, cp932...), and `guessed` is True."""
    if info.flag_bits & UTF8_FLAG:
        return info.filename, False
    raw = info.orig_filename.encode("cp437")  # zipfile decoded the raw bytes as cp437: undo that, losslessly
    unicode_path = _unicode_path(info.extra, raw)
    if unicode_path is not None:
        return unicode_path, False
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode(encoding, errors="replace"), not raw.isascii()


def _member_path(info, encoding):
    """(name, guessed) as `member_name`, with backslashes read as folder separators where the name was read
    for sure: Windows PowerShell 5's Compress-Archive writes `Week 3\\alice\\attention.py` (the ZIP standard
    says '/'). A name in a guessed code page keeps them: there a backslash can be half of a character
    (Shift-JIS, GBK)."""
    name, guessed = member_name(info, encoding)
    return (name if guessed else name.replace("\\", "/")), guessed


def _unicode_path(extra, raw):
    """The UTF-8 name in an Info-ZIP Unicode Path extra field whose CRC matches `raw`, else None."""
    position = 0
    while position + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, position)
        body = extra[position + 4:position + 4 + size]
        if kind == UNICODE_PATH_EXTRA and len(body) >= 5 and body[0] == 1:
            if struct.unpack_from("<I", body, 1)[0] == zlib.crc32(raw):
                try:
                    return body[5:].decode("utf-8")
                except UnicodeDecodeError:
                    return None
        position += 4 + size
    return None


def _extract(archive, folder, collected, encoding=DEFAULT_ZIP_ENCODING):
    """Extract a zip defensively: no paths outside `folder`, no links, bounded size and count, nothing
    written over another member.

    Sizes in a zip's headers can lie, so bytes are counted as they are unpacked. A member that cannot
    be unpacked costs only itself: it is kept in `collected.unpacked_not` with the reason, and the
    student whose file it was gets a zero row with it. Two members under one path (a zip may hold that;
    unzip tools keep one, most the last) are graded once when they are the same file, and refused by
    name when they differ: which one the student meant cannot be told."""
    problems = collected.problems
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = zipped.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                problems.append(f"{archive.name}: holds {len(members)} files; only the first "
                                f"{MAX_ZIP_MEMBERS} were considered")
                members = members[:MAX_ZIP_MEMBERS]
            members = _without_duplicates(archive, members, encoding, problems)
            left = MAX_ZIP_TOTAL
            guessed = 0
            collisions = []
            for info in members:
                name, was_guessed = _member_path(info, encoding)
                guessed += was_guessed
                parts = Path(name).parts
                if name.startswith("/") or ".." in parts or stat.S_ISLNK(info.external_attr >> 16):
                    problems.append(f"{archive.name}: skipped {name!r} (unsafe path or link)")
                    continue
                if info.is_dir():
                    continue
                target = folder.joinpath(*parts)
                code = Path(name).suffix in SUFFIXES
                if name.endswith(".zip"):
                    why = f"{name} {NESTED_ZIP}; unzip it and submit the files it holds"
                    problems.append(f"{archive.name}: skipped nested archive {name!r}; unzip it and submit the files")
                    collected.unpacked_not[target] = why
                    continue
                if info.file_size > MAX_ZIP_MEMBER or info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
                    why = (f"{name} unpacks to {info.file_size / 1e6:.1f} MB from {info.compress_size / 1e3:.1f} kB: "
                           "far larger than any code file; submit the source only")
                    problems.append(f"{archive.name}: skipped {name!r} (too large once unpacked)")
                    if code:
                        collected.unpacked_not[target] = why
                    continue
                if left <= 0:
                    problems.append(f"{archive.name}: stopped unpacking at {name!r} (archive too large)")
                    break
                if target.is_file():  # another member's name, as this file system sees it (case, Unicode forms)
                    collisions.append(name)
                    continue
                problem = _extract_member(zipped, info, target, min(MAX_ZIP_MEMBER, left))
                if isinstance(problem, str):
                    problems.append(f"{archive.name}: skipped {name!r} ({problem})")
                    if code:
                        collected.unpacked_not[target] = f"{name} could not be unpacked: {problem}"
                else:
                    left -= problem
            if guessed:
                problems.append(f"{archive.name}: {guessed} file name(s) are neither marked nor valid UTF-8; read as "
                                f"{encoding} (if names look wrong, set ZIP_ENCODING, e.g. cp850, cp866, cp932, gbk)")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as error:
        raise UsageError(f"{archive} is not a valid zip file ({error}); re-download it and try again") from None
    if collisions:
        raise UsageError(f"{archive.name}: {', '.join(map(repr, collisions))} would be unpacked over another file of "
                         "the zip (names that differ only in case or Unicode form): which one the student meant "
                         "cannot be told; unzip it on a case-sensitive file system, keep the right files and grade "
                         "the folder")


def _without_duplicates(archive, members, encoding, problems):
    """The members, each path once: a path held twice by the same file (same size and CRC) is unpacked
    once and said; a path held by different files refuses the zip, naming each path (UsageError)."""
    by_path: dict[tuple[str, ...], list[zipfile.ZipInfo]] = {}
    for info in members:
        if not info.is_dir():
            by_path.setdefault(Path(_member_path(info, encoding)[0]).parts, []).append(info)
    refused: list[str] = []
    skipped: set[int] = set()
    for parts, infos in by_path.items():
        if len(infos) < 2:
            continue
        name = "/".join(parts)
        if len({(info.CRC, info.file_size) for info in infos}) == 1:
            problems.append(f"{archive.name}: holds {name!r} twice or more (the same file each time); graded once")
        else:
            refused.append(f"{len(infos)} different files named {name!r}")
        skipped.update(id(info) for info in infos[1:])
    if refused:
        raise UsageError(f"{archive.name} holds {'; '.join(refused)}: unzip tools keep only one (most the last), and "
                         "which one the student meant cannot be told, so nothing was graded. Ask the student or "
                         "re-download the zip; to grade the rest now, unzip it, keep the right file and grade the "
                         "folder")
    return [info for info in members if id(info) not in skipped]


def _extract_member(zipped, info, target, limit):
    """Unpack one member, counting the bytes (headers can lie). Returns the size, or why it failed."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        with zipped.open(info) as source, open(target, "wb") as sink:
            while chunk := source.read(1 << 16):
                written += len(chunk)
                if written > limit:
                    raise ValueError("too large once unpacked")
                sink.write(chunk)
        return written
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError, RuntimeError) as error:
        target.unlink(missing_ok=True)
        return str(error) or type(error).__name__  # a corrupt, encrypted or oversized member
    except OSError as error:  # e.g. a file and a folder with the same name
        return f"cannot be written: {error.strerror}"
