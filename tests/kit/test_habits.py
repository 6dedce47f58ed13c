"""The checks a maintainer relies on run with the tests: ruff over the engine, mypy over its typed core
(pyproject.toml holds both settings), and the version the changelog's newest entry names."""

import re
import subprocess
import sys
import tomllib

from grader.paths import ROOT


def tool(name, *args):
    return subprocess.run([sys.executable, "-m", name, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing_in_the_engine():
    done = tool("ruff", "check", "grader", "--output-format", "concise")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_mypy_finds_nothing_in_the_typed_core():
    done = tool("mypy")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_changelog_names_the_version_of_pyproject():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    newest = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert newest and newest[1] == version


def test_no_process_is_started_with_preexec_fn():
    """subprocess's preexec_fn runs Python between fork and exec in a process with threads (the grader's judges,
    this suite's sandbox pools), where it can deadlock (the subprocess docs warn of it). tests/kit/launch.py
    applies such settings in the started process instead; subprocess's own umask, process_group and user
    arguments need nothing. (bench/ keeps one: its process starts no thread.)"""
    found = [f"{path.relative_to(ROOT)}:{number}" for folder in ("grader", "tests")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for number, line in enumerate(path.read_bytes().splitlines(), 1)  # bytes: some samples are not UTF-8
             if re.search(rb"preexec_fn\s*=", line)]
    assert not found, found
