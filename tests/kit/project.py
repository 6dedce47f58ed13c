"""A throwaway copy of the kit for tests that run `make` or the docs' commands verbatim.

Every top-level entry of the kit is linked (nothing is copied but .venv's small files), so the
commands read the real sources; what they write (dist/, out-*/) lands in the copy. `.venv` is a
folder of links to the real environment with its own, fresh `.installed`, so `make` never reinstalls
(requirements files edited after the last install would otherwise start pip).
"""

import os
import shutil
from pathlib import Path

from grader.paths import ROOT

LEFT_OUT = {".venv", ".git", "dist", "out", ".pytest_cache"}
# What the `make test` running this suite adds to the environment of its children: a command run
# "as a person types it" must not inherit it (MAKELEVEL alone makes make print "Entering directory").
MAKE_PARENT = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")


def shell_env(**extra):
    """os.environ as at a person's shell prompt: without what an outer make passes down."""
    env = {key: value for key, value in os.environ.items() if key not in MAKE_PARENT}
    env.update(extra)
    return env


def kit_project(folder):
    """A copy of the kit in `folder` (created); returns its path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for entry in ROOT.iterdir():
        if entry.name not in LEFT_OUT and not entry.name.startswith("out-"):
            (folder / entry.name).symlink_to(entry)
    venv = folder / ".venv"
    venv.mkdir()
    for entry in (ROOT / ".venv").iterdir():
        if entry.name == "pyvenv.cfg":
            shutil.copyfile(entry, venv / entry.name)
        elif entry.name != ".installed":
            (venv / entry.name).symlink_to(entry)
    (venv / ".installed").touch()
    newest = max(path.stat().st_mtime for path in ROOT.glob("requirements*.txt"))
    os.utime(venv / ".installed", (newest + 1, newest + 1))
    return folder
