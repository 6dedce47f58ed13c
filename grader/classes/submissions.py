"""Turn the PATH given to `grade` into named submission files: a file, a folder or a zip."""

import re
import stat
import struct
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from grader.check.loader import MAX_NOTEBOOK_BYTES
from grader.classes import lms_names
from grader.text import clean, safe_name

SUFFIXES = (".py", ".ipynb")
MAX_ZIP_TOTAL = 200 * 1024 * 1024
MAX_ZIP_MEMBER = MAX_NOTEBOOK_BYTES  # a notebook saved with its plots; the loader bounds the code inside
MAX_ZIP_RATIO = 200
MAX_ZIP_MEMBERS = 20_000


@dataclass
class Collected:
    submissions: list = field(default_factory=list)  # (name, Path)
    problems: list = field(default_factory=list)  # files that were not graded, and why
    rejected: list = field(default_factory=list)  # (name, message): a student whose only file cannot be graded
    origins: dict = field(default_factory=dict)  # submission name -> lms_names.Origin (LMS downloads only)
    temporary: object = None

    def cleanup(self):
        if self.temporary is not None:
            self.temporary.cleanup()


class UsageError(Exception):
    pass


def collect(path, zip_encoding=None):
    """Submissions under `path`. A folder holds files, or one folder per student.

    `zip_encoding`: the code page for zip member names that are neither flagged UTF-8 nor valid UTF-8
    (default cp437, the ZIP standard's; see `member_name`)."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path} does not exist; give a .py, .ipynb, a folder of them or a .zip")
    collected = Collected()
    if path.is_file() and path.suffix == ".zip":
        collected.temporary = tempfile.TemporaryDirectory(prefix="grade-zip-")
        folder = Path(collected.temporary.name)
        _extract(path, folder, collected, zip_encoding or DEFAULT_ZIP_ENCODING)
        entries = [e for e in folder.iterdir() if not e.name.startswith((".", "__"))]
        if len(entries) == 1 and entries[0].is_dir():  # a zip of one folder of submissions
            folder = entries[0]
        _collect_folder(folder, collected)
        _name_by_lms(folder, collected)
    elif path.is_file():
        if path.suffix not in SUFFIXES:
            raise UsageError(f"{path} is not a .py, .ipynb or .zip file")
        collected.submissions.append((safe_name(path.stem), path))
    elif path.is_dir():
        _collect_folder(path, collected)
        _name_by_lms(path, collected)
    else:
        raise UsageError(f"{path} is neither a file nor a folder")
    collected.submissions = _named_apart(collected.submissions, collected.problems)
    by_path = collected.origins  # filled by path while collecting; keyed by final name from here on
    collected.origins = {name: by_path[path] for name, path in collected.submissions if path in by_path}
    graded = {name for name, _ in collected.submissions}
    rejected = {}
    for name, why in collected.rejected:
        if name not in graded:
            rejected.setdefault(name, why)
    collected.rejected = list(rejected.items())
    return collected


def _named_apart(entries, problems):
    """Give every submission its own name, so that none overwrites another's results.

    `alice.py` and `alice.ipynb` become `alice.py` and `alice.ipynb`; two folders
    that normalise to the same safe name (`alice smith/`, `alice_smith/`) become
    `alice_smith` and `alice_smith-2`, in the order they were found."""
    groups = {}
    for name, path in entries:
        groups.setdefault(name, []).append(path.suffix)
    seen, named = set(), []
    for name, path in entries:
        unique = name
        if len(groups[name]) > 1:
            if groups[name].count(path.suffix) == 1:
                unique = f"{name}{path.suffix}"
            base, number = unique, 2
            while unique in seen or (unique != name and unique in groups):
                unique, number = f"{base}-{number}", number + 1
            if unique != name:
                problems.append(f"{path}: another submission is also named {name!r}; graded as {unique!r}")
        seen.add(unique)
        named.append((unique, path))
    return named


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
        for name, path in collected.submissions:
            if name in origins:
                collected.origins[path] = origins[name]
        collected.submissions = [(names.get(name, name), path) for name, path in collected.submissions]
        collected.problems = [p for p in collected.problems if not p.startswith(f"{metadata.name}:")]
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
    files = {}  # the student (LMS id and name) -> their files (an upload of several files, or resubmitted names)
    for path, (_, name, origin) in parsed.items():
        files.setdefault((origin.key, origin.student), []).append((name, origin, path))
    named = []
    for group in files.values():
        group.sort(key=lambda item: (re.sub(r"-\d+$", "", Path(item[1].original).stem) != "attention",
                                     item[2].suffix != ".py", item[2].name))
        name, origin, path = group[0]
        named.append((name, path))
        collected.origins[path] = origin
        if len(group) > 1:
            collected.problems.append(f"{name}: several code files; graded {origin.original}")
    collected.submissions = named


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


def _collect_folder(folder, collected):
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith((".", "__")):
            continue
        if entry.is_symlink():  # it could point anywhere: at another student's file, or the hidden tests
            collected.problems.append(f"{clean(entry.name)}: a symbolic link; skipped (submit the file itself)")
        elif entry.is_file() and entry.suffix in SUFFIXES:
            collected.submissions.append((safe_name(entry.stem), entry))
        elif entry.is_dir():
            files = sorted(p for p in entry.rglob("*") if p.suffix in SUFFIXES and not p.is_symlink() and p.is_file()
                           and not any(part.startswith((".", "__")) for part in p.relative_to(entry).parts))
            if len(files) == 1:
                collected.submissions.append((safe_name(entry.name), files[0]))
            elif files:
                preferred = [p for p in files if p.name in ("attention.py", "attention.ipynb")]
                choice = preferred[0] if preferred else files[0]
                collected.submissions.append((safe_name(entry.name), choice))
                collected.problems.append(f"{clean(entry.name)}: several code files; graded "
                                          f"{clean(choice.relative_to(entry))}")
            else:
                collected.problems.append(_not_code_note(entry)
                                          or f"{clean(entry.name)}: no .py or .ipynb file inside; nothing to grade")
        elif entry.is_file():
            collected.problems.append(_not_code_note(entry)
                                      or f"{clean(entry.name)}: not a .py or .ipynb file; skipped")


def _owner(name):
    """The student a zip member belongs to: its top folder, or its own name at the top level, named
    as the LMS download names them (a Canvas file, a Moodle folder)."""
    parts = Path(name).parts
    if len(parts) > 1:
        moodle = lms_names.parse_moodle_folder(parts[0])
        return moodle.name if moodle else safe_name(parts[0])
    lms = lms_names.parse_canvas_name(name) or lms_names.parse_moodle_file(name)
    return lms.name if lms else safe_name(Path(name).stem)


DEFAULT_ZIP_ENCODING = "cp437"  # what the ZIP standard (APPNOTE 4.4.4) says unflagged names are
UTF8_FLAG = 0x800  # general purpose bit 11: the name is UTF-8
UNICODE_PATH_EXTRA = 0x7075  # Info-ZIP's field: a UTF-8 copy of the name, with the CRC of the one it replaces


def member_name(info, encoding=DEFAULT_ZIP_ENCODING):
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
    """Extract a zip defensively: no paths outside `folder`, no links, bounded size and count.

    Sizes in a zip's headers can lie, so bytes are counted as they are unpacked.
    A member that cannot be unpacked costs only itself; when it was the student's
    code, that student is listed in `collected.rejected` with the reason."""
    problems = collected.problems
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = zipped.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                problems.append(f"{archive.name}: holds {len(members)} files; only the first "
                                f"{MAX_ZIP_MEMBERS} were considered")
                members = members[:MAX_ZIP_MEMBERS]
            left = MAX_ZIP_TOTAL
            guessed = 0
            for info in members:
                name, was_guessed = member_name(info, encoding)
                guessed += was_guessed
                parts = Path(name).parts
                if name.startswith("/") or ".." in parts or stat.S_ISLNK(info.external_attr >> 16):
                    problems.append(f"{archive.name}: skipped {name!r} (unsafe path or link)")
                    continue
                if info.is_dir():
                    continue
                code = Path(name).suffix in SUFFIXES
                if name.endswith(".zip"):
                    why = f"{name} is a zip inside the zip; unzip it and submit the files it holds"
                    problems.append(f"{archive.name}: skipped nested archive {name!r}; unzip it and submit the files")
                    collected.rejected.append((_owner(name), why))
                    continue
                if info.file_size > MAX_ZIP_MEMBER or info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
                    why = (f"{name} unpacks to {info.file_size / 1e6:.1f} MB from {info.compress_size / 1e3:.1f} kB: "
                           "far larger than any code file; submit the source only")
                    problems.append(f"{archive.name}: skipped {name!r} (too large once unpacked)")
                    if code:
                        collected.rejected.append((_owner(name), why))
                    continue
                if left <= 0:
                    problems.append(f"{archive.name}: stopped unpacking at {name!r} (archive too large)")
                    break
                problem = _extract_member(zipped, info, folder.joinpath(*parts), min(MAX_ZIP_MEMBER, left))
                if isinstance(problem, str):
                    problems.append(f"{archive.name}: skipped {name!r} ({problem})")
                    if code:
                        collected.rejected.append((_owner(name), f"{name} could not be unpacked: {problem}"))
                else:
                    left -= problem
            if guessed:
                problems.append(f"{archive.name}: {guessed} file name(s) are neither marked nor valid UTF-8; read as "
                                f"{encoding} (if names look wrong, set ZIP_ENCODING, e.g. cp850, cp866, cp932, gbk)")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as error:
        raise UsageError(f"{archive} is not a valid zip file ({error}); re-download it and try again") from None


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
