"""docs/publishing.md's nbgrader section, followed command by command on a zip of five students.

The commands are read from the doc and run as written, in a throwaway copy of the kit (so `make
publish` builds a fresh dist/), with HOME pointing at a folder whose Downloads/ holds the roster and
the LMS zip the doc names. nbgrader's export must give each student what the kit's grader gives.
"""

import csv
import json
import re
import subprocess
import zipfile

import pytest

from grader.build.exercises import code_sections
from grader.chapter import STEP_KEYS, TOTAL_POINTS
from grader.faults.bugs import BUGS
from grader.paths import ROOT
from tests.kit.project import kit_project, shell_env

pytestmark = pytest.mark.slow(reason='the documented nbgrader flow for real, in a kit copy, on five students')

STUDENTS = {  # student id -> what the notebook holds
    "s1001": "solution", "s1002": "stub", "s1003": "masking_not_renormalised", "s1004": "solution",
    "s1005": "mha_split_view_without_transpose"}


def doc_commands(section="## nbgrader"):
    """The first ```sh block of a section of docs/publishing.md, one command per line."""
    text = (ROOT / "docs" / "publishing.md").read_text(encoding="utf-8")
    body = text[text.index(section):]
    block = re.search(r"```sh\n(.*?)```", body, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def filled(release_text, source):
    document = json.loads(release_text)
    sections = code_sections(source)
    for cell in document["cells"]:
        key = cell["id"].removesuffix("-code")
        if cell["id"].endswith("-code") and key in sections:
            cell["source"] = sections[key]
    return json.dumps(document, indent=1, ensure_ascii=False)


def run_commands(commands, cwd, env):
    """Run the commands in one bash, as a reader would type them; (output, seconds per command)."""
    script = ["set -e"]
    for index, command in enumerate(commands):
        script += ["__start=$(date +%s%N)", command, f'echo "__timing {index} $(( ($(date +%s%N) - __start) / 1000000 ))"']
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=1200)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    seconds = {int(m[1]): int(m[2]) / 1000 for m in re.finditer(r"__timing (\d+) (\d+)", done.stdout)}
    return output, seconds


@pytest.fixture(scope="module")
def flow(tmp_path_factory, clean, stub):
    project = kit_project(tmp_path_factory.mktemp("kit") / "kit")
    home = tmp_path_factory.mktemp("home")
    downloads = home / "Downloads"
    downloads.mkdir()
    with open(downloads / "students.csv", "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["id", "first_name", "last_name", "email"])
        writer.writerows([student, f"Student{i}", "Núñez, Jr." if i == 1 else f"Last{i}", ""]
                         for i, student in enumerate(STUDENTS, start=1))
    commands = doc_commands()
    assert commands[0].startswith("make publish") and "nbgrader zip_collect attention" in commands
    # The zip needs the release notebook, which the first command builds: build it, then the rest.
    env = shell_env(HOME=str(home))
    first, first_seconds = run_commands(commands[:1], project, env)
    release = (project / "dist" / "nbgrader" / "release" / "attention" / "attention.ipynb").read_text()
    bugs = {bug.id: bug for bug in BUGS}
    sources = {"solution": clean, "stub": stub, **{key: bug.apply(clean) for key, bug in bugs.items()}}
    with zipfile.ZipFile(downloads / "submissions.zip", "w") as zipped:
        for student, kind in STUDENTS.items():
            # s1004 sent the untouched release first, then the solution, which the LMS renamed attention-1.ipynb:
            # before, nbgrader zip_collect stopped at "Duplicate submission file"; the later copy is collected.
            name = "attention-1.ipynb" if student == "s1004" else "attention.ipynb"
            zipped.writestr(f"{student}/{name}", release if kind == "stub" else filled(release, sources[kind]))
        zipped.writestr("s1004/attention.ipynb", release)
    output, seconds = run_commands(commands[1:], project, env)
    timings = {commands[0]: first_seconds[0], **{commands[1 + i]: value for i, value in seconds.items()}}
    print("\n".join(f"{value:6.1f}s  {command}" for command, value in timings.items()))
    course = project / "dist" / "nbgrader"
    with open(course / "grades.csv", newline="", encoding="utf-8") as stream:
        exported = {row["student_id"]: row for row in csv.DictReader(stream)}
    return course, output, exported, timings


def test_the_documented_flow_collects_and_grades_five_students(flow):
    course, output, exported, timings = flow
    assert sorted(path.parent.name for path in course.glob("submitted/*/attention")) == sorted(STUDENTS)
    assert set(exported) == set(STUDENTS)
    assert exported["s1001"]["score"] == f"{TOTAL_POINTS:g}" == exported["s1004"]["score"]
    assert float(exported["s1002"]["score"]) < TOTAL_POINTS / 2  # the untouched release notebook
    bugs = {bug.id: bug for bug in BUGS}
    for student in ("s1003", "s1005"):
        step = bugs[STUDENTS[student]].step
        assert float(exported[student][step]) < float(exported["s1001"][step]), student
        others = [key for key in STEP_KEYS if key != step]
        assert all(exported[student][key] == exported["s1001"][key] for key in others), student
    assert exported["s1001"]["last_name"] == "Núñez, Jr."
    assert all((course / "feedback" / student / "attention" / "attention.html").is_file() for student in STUDENTS)


def test_autograde_prints_one_explained_line_per_notebook_not_checksum_noise(flow):
    _, output, _, _ = flow
    assert "Attribute 'checksum'" not in output
    restored = re.findall(r"restored the hidden tests of (\d+) check cells", output)
    assert len(restored) == len(STUDENTS) and len(set(restored)) == 1
    assert "SAWarning" not in output


def test_the_course_id_is_a_setting(flow, tmp_path):
    course, _, _, _ = flow
    assert "c.CourseDirectory.course_id = 'attention'" in (course / "nbgrader_config.py").read_text()
    from grader.integrations import nbgrader as course_builder

    course_builder.build(tmp_path, course_id="ml101")
    assert "c.CourseDirectory.course_id = 'ml101'" in (tmp_path / "nbgrader" / "nbgrader_config.py").read_text()
