"""Files the grader writes: atomically, so that a reader never sees half of one.

A new file gets the permissions the umask gives (the course team's group can
read OUT where its umask says so), as `open` would give; a write that fails
(full disk, no permission) raises `OutputError`, whose message names the file.
"""

import os
import secrets
from pathlib import Path


class OutputError(Exception):
    """A file of OUT could not be written (disk full, read-only, no permission): what and where."""


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write a file so that readers see the old or the new content, never half of it."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = _create_beside(path)
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass  # already gone; the write's own error is the one to report
        if isinstance(error, OSError):
            raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
        raise


def _create_beside(path):
    """(fd, name) of a new hidden file beside `path`, created with mode 0o666 so that the kernel applies
    the umask (tempfile.mkstemp forces 0o600, and reading the umask in a threaded program is a race)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        temporary = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")
