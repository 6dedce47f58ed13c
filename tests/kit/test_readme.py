"""The README's commands work as written: each shell line of its code blocks is run here.

`make test` is the command running this very suite (and CI's `.ci/run`), so it is
only checked to be what CI calls. Every other line runs for real, from the folder
the README runs it in, with the kit's environment; a new command in the README
that this test cannot run fails it, so the README cannot drift from the kit.
"""

import os
import re
import shlex
import shutil
import subprocess

import pytest

from grader.paths import ROOT

from tests.kit.project import kit_project, shell_env

README = ROOT / "README.md"


def readme_commands():
    """[(folder, command)] of every line in the README's ```sh blocks, in order; each block starts
    in the repository's root, and `cd` moves it."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S):
        folder = "."
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            if command.startswith("cd "):
                folder = command[3:].strip()
            elif command:
                commands.append((folder, command))
    return commands


def test_the_readme_names_the_two_commands_and_ci_runs_the_test_command():
    commands = [command for _, command in readme_commands()]
    assert commands[:2] == ["make test", "make grade"]
    assert "make test" in (ROOT / ".ci" / "run").read_text()


@pytest.fixture
def student_copy(tmp_path):
    """The student release as a student unzips it: outside the repository."""
    copy = tmp_path / "student_template"
    shutil.copytree(ROOT / "student_template", copy)
    return copy


@pytest.fixture(scope="module")
def kit_copy(tmp_path_factory):
    """The kit as an instructor clones it, without any earlier run's output: the README's commands run
    in it one after the other, as a person runs them, and what they write (out/, dist/) lands there."""
    return kit_project(tmp_path_factory.mktemp("readme") / "kit")


def run_line(folder, command, student_copy, kit_copy):
    env = shell_env(PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    words = shlex.split(command)
    if folder == "student_template":  # the student's own Python runs the checker
        return subprocess.run(words, cwd=student_copy, capture_output=True, text=True, env=env, timeout=300)
    assert folder == ".", f"the README runs {command!r} from {folder}: teach this test where that is"
    return subprocess.run(words, cwd=kit_copy, capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.parametrize("folder, command", [entry for entry in readme_commands() if entry[1] != "make test"],
                         ids=lambda value: str(value))
@pytest.mark.slow(reason='runs each README command for real (make grade, make publish...) in a kit copy')
def test_each_readme_command_works_as_written(folder, command, student_copy, kit_copy):
    done = run_line(folder, command, student_copy, kit_copy)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-3000:]
    if command.startswith("python check.py"):
        # The untouched release: the checker runs and says what is left to do (exit 1 = checks fail).
        assert done.returncode == 1 and "not implemented yet" in done.stdout, output[-3000:]
    else:
        assert done.returncode == 0, output[-3000:]
