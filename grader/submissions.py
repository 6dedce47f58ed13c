"""Turn the PATH given to `grade` into named submission files: a file, a folder or a zip."""

import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

SUFFIXES = (".py", ".ipynb")
MAX_ZIP_TOTAL = 200 * 1024 * 1024
MAX_ZIP_MEMBER = 5 * 1024 * 1024
MAX_ZIP_RATIO = 200


@dataclass
class Collected:
    submissions: list = field(default_factory=list)  # (name, Path)
    problems: list = field(default_factory=list)  # files that were not graded, and why
    temporary: object = None

    def cleanup(self):
        if self.temporary is not None:
            self.temporary.cleanup()


class UsageError(Exception):
    pass


def safe_name(text):
    return re.sub(r"[^\w.\-]+", "_", text, flags=re.UNICODE).strip("._") or "submission"


def collect(path):
    """Submissions under `path`. A folder holds files, or one folder per student."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path} does not exist; give a .py, .ipynb, a folder of them or a .zip")
    collected = Collected()
    if path.is_file() and path.suffix == ".zip":
        collected.temporary = tempfile.TemporaryDirectory(prefix="grade-zip-")
        folder = Path(collected.temporary.name)
        _extract(path, folder, collected.problems)
        entries = [e for e in folder.iterdir() if not e.name.startswith((".", "__"))]
        if len(entries) == 1 and entries[0].is_dir():  # a zip of one folder of submissions
            folder = entries[0]
        _collect_folder(folder, collected)
    elif path.is_file():
        if path.suffix not in SUFFIXES:
            raise UsageError(f"{path} is not a .py, .ipynb or .zip file")
        collected.submissions.append((path.stem, path))
    else:
        _collect_folder(path, collected)
    names = [name for name, _ in collected.submissions]
    for index, (name, file) in enumerate(collected.submissions):
        if names.count(name) > 1:  # alice.py and alice.ipynb: keep both, named apart
            collected.submissions[index] = (f"{name}{file.suffix}", file)
    return collected


def _collect_folder(folder, collected):
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith((".", "__")):
            continue
        if entry.is_file() and entry.suffix in SUFFIXES:
            collected.submissions.append((safe_name(entry.stem), entry))
        elif entry.is_dir():
            files = sorted(p for p in entry.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                           and not any(part.startswith((".", "__")) for part in p.relative_to(entry).parts))
            if len(files) == 1:
                collected.submissions.append((safe_name(entry.name), files[0]))
            elif files:
                preferred = [p for p in files if p.name in ("attention.py", "attention.ipynb")]
                choice = preferred[0] if preferred else files[0]
                collected.submissions.append((safe_name(entry.name), choice))
                collected.problems.append(f"{entry.name}: several code files; graded {choice.relative_to(entry)}")
            else:
                collected.problems.append(f"{entry.name}: no .py or .ipynb file inside; nothing to grade")
        elif entry.is_file():
            collected.problems.append(f"{entry.name}: not a .py or .ipynb file; skipped")


def _extract(archive, folder, problems):
    """Extract a zip defensively: no paths outside `folder`, no links, bounded size."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            total = 0
            for info in zipped.infolist():
                name = info.filename
                parts = Path(name).parts
                if name.startswith("/") or ".." in parts or (info.external_attr >> 16) & stat.S_IFLNK == stat.S_IFLNK:
                    problems.append(f"{archive.name}: skipped {name!r} (unsafe path or link)")
                    continue
                if info.is_dir():
                    continue
                if name.endswith(".zip"):
                    problems.append(f"{archive.name}: skipped nested archive {name!r}; unzip it and submit the files")
                    continue
                if info.file_size > MAX_ZIP_MEMBER or info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
                    problems.append(f"{archive.name}: skipped {name!r} (too large once unpacked)")
                    continue
                total += info.file_size
                if total > MAX_ZIP_TOTAL:
                    problems.append(f"{archive.name}: stopped unpacking at {name!r} (archive too large)")
                    break
                target = folder.joinpath(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(info) as source, open(target, "wb") as sink:
                    shutil.copyfileobj(source, sink)
    except zipfile.BadZipFile:
        raise UsageError(f"{archive} is not a valid zip file; re-download it and try again") from None
