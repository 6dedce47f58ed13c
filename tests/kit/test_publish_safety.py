"""Publishing never destroys grading work.

An nbgrader course is taken mid-term — students imported, submissions collected and autograded,
feedback generated, a grade changed by hand in the gradebook, grades exported, the instructor's own
course_config.py and notes — and published over: every bit of that work is intact afterwards (files
byte for byte, the gradebook row for row). Changed tests that would alter graded cells are refused
with what would change, and change nothing; a hand-edited nbgrader_config.py is refused too; a folder
holding a graded class is never a publish target.
"""

import hashlib
import json
import sqlite3
from contextlib import closing

import pytest

from grader.integrations import publish as publishing
from grader.build.exercises import code_sections
from grader.integrations.publish import PublishRefused, publish
from grader.integrations import nbgrader as course_builder

pytestmark = pytest.mark.slow(
    reason="publishes the nbgrader course again and again: nbgrader's commands run as processes")

STUDENTS = [("amy", "Amy", "Adams"), ("bo", "Bo", "Björk")]


def filled(release_text, source):
    document = json.loads(release_text)
    sections = code_sections(source)
    for cell in document["cells"]:
        key = cell["id"].removesuffix("-code")
        if cell["id"].endswith("-code") and key in sections:
            cell["source"] = sections[key]
    return json.dumps(document, indent=1, ensure_ascii=False)


def gradebook_rows(db):
    """Every row of every table, in order: the gradebook as data."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
        return list(connection.iterdump())


def grading_work(course):
    """{path: sha256} of every file that is not the kit's own (student work, gradebook, exports, notes)."""
    work = {}
    for path in sorted(course.rglob("*")):
        relative = path.relative_to(course.parent).as_posix()
        if path.is_file() and "__pycache__" not in path.parts and not publishing.under(relative, ["nbgrader"],
                                                                                        publishing.OWNED):
            work[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return work


@pytest.fixture(scope="module")
def midterm(tmp_path_factory, clean):
    """A course in use: published, students imported, two submissions autograded, feedback, a hand grade."""
    dist = tmp_path_factory.mktemp("dist")
    publish(dist, ("nbgrader",))
    course = dist / "nbgrader"
    (course / "students.csv").write_text("id,first_name,last_name,email\n"
                                         + "".join(f"{i},{first},{last},\n" for i, first, last in STUDENTS))
    course_builder.nbgrader(course, "db", "student", "import", "students.csv")
    course_builder.nbgrader(course, "db", "assignment", "add", "attention", "--duedate=2030-01-01 00:00:00 UTC")
    release = (course / "release" / "attention" / "attention.ipynb").read_text()
    for student, text in (("amy", filled(release, clean)), ("bo", release)):
        folder = course / "submitted" / student / "attention"
        folder.mkdir(parents=True)
        (folder / "attention.ipynb").write_text(text)
        (folder / "timestamp.txt").write_text("2029-12-31 12:00:00 UTC")
    course_builder.nbgrader(course, "autograde", "attention")
    course_builder.nbgrader(course, "generate_feedback", "attention")
    with closing(sqlite3.connect(course / "gradebook.db")) as connection:  # a grade changed by hand
        connection.execute("update grade set manual_score = 1.5 where id = (select id from grade limit 1)")
        connection.commit()
    course_builder.nbgrader(course, "export", "--to", "export.csv")
    (course / "course_config.py").write_text("c = get_config()  # noqa: F821\nc.Execute.timeout = 90\n")
    (course / "notes.md").write_text("bo asked for an extension\n")
    return dist, course


def test_the_midterm_course_holds_grading_work(midterm):
    _, course = midterm
    work = course_builder.student_work(course)
    assert any("2 submission(s)" in line and "1 given by hand" in line for line in work), work
    assert {"submitted/", "autograded/", "feedback/"} <= {line.split(":")[0] for line in work}


def test_republishing_loses_nothing(midterm):
    dist, course = midterm
    work, rows = grading_work(course), gradebook_rows(course / "gradebook.db")
    (course / "release" / "attention" / "stale.txt").write_text("left from an older build")
    publish(dist, ("nbgrader",))
    assert grading_work(course) == work
    assert gradebook_rows(course / "gradebook.db") == rows
    assert (course / "release" / "attention" / "attention.ipynb").is_file()
    assert not (course / "release" / "attention" / "stale.txt").exists()  # the kit's own stale file goes
    assert "c.Execute.timeout = 90" in (course / "course_config.py").read_text()
    course_builder.nbgrader(course, "export", "--to", "export-again.csv")  # the course still works
    assert (course / "export-again.csv").read_text() == (course / "export.csv").read_text()
    (course / "export-again.csv").unlink()


def test_text_changes_are_published_without_touching_the_gradebook(midterm, monkeypatch):
    dist, course = midterm
    work, rows = grading_work(course), gradebook_rows(course / "gradebook.db")
    monkeypatch.setattr(course_builder, "INTRO", course_builder.INTRO + "\n\nRevised after the first week.")
    publish(dist, ("nbgrader",))
    assert "Revised after the first week." in (course / "source" / "attention" / "attention.ipynb").read_text()
    assert "Revised after the first week." in (course / "release" / "attention" / "attention.ipynb").read_text()
    assert grading_work(course) == work and gradebook_rows(course / "gradebook.db") == rows


def test_changed_graded_cells_are_refused_and_nothing_changes(midterm, monkeypatch):
    dist, course = midterm
    everything = {path: path.read_bytes() for path in course.rglob("*") if path.is_file()}
    original = course_builder.check_cell
    changed = []

    def one_more_point(test):
        cell = original(test)
        if not changed:
            cell["metadata"]["nbgrader"]["points"] += 1
            changed.append(cell["metadata"]["nbgrader"]["grade_id"])
        return cell

    monkeypatch.setattr(course_builder, "check_cell", one_more_point)
    with pytest.raises(PublishRefused) as refused:
        publish(dist, ("nbgrader",))
    message = str(refused.value)
    assert f"cell attention: {changed[0]}: GradeCell would change" in message
    assert "2 submission(s) of attention" in message and "nothing was changed" in message
    assert {path: path.read_bytes() for path in course.rglob("*") if path.is_file()} == everything


def test_changed_grading_code_is_refused_and_nothing_changes(midterm, monkeypatch):
    """Blind review (round 3): a changed hidden test (and a changed public check) was installed into a course that
    held grades, exit 0: a student autograded after it was graded by other code than one before it."""
    dist, course = midterm
    everything = {path: path.read_bytes() for path in course.rglob("*") if path.is_file()}
    original = course_builder._copy_sources

    def edited(paths, target):
        original(paths, target)
        if target.name == "hidden":
            with open(sorted(target.glob("test_*.py"))[0], "a", encoding="utf-8") as stream:
                stream.write("\n# a stricter tolerance, say\n")

    monkeypatch.setattr(course_builder, "_copy_sources", edited)
    with pytest.raises(PublishRefused) as refused:
        publish(dist, ("nbgrader",))
    message = str(refused.value)
    assert "the code that grades would change" in message and "kit_hidden_tests/hidden/test_" in message
    assert "2 submission(s) of attention" in message and "nothing was changed" in message
    assert {path: path.read_bytes() for path in course.rglob("*") if path.is_file()} == everything


def test_another_course_id_over_a_graded_course_is_refused(midterm):
    """Blind review (round 3): COURSE_ID=ml101 over the graded course `attention` rewrote its course id, exit 0,
    and nbgrader then kept a second course row beside the graded one."""
    dist, course = midterm
    everything = {path: path.read_bytes() for path in course.rglob("*") if path.is_file()}
    with pytest.raises(PublishRefused) as refused:
        publish(dist, ("nbgrader",), course_id="ml101")
    assert "the course in" in str(refused.value) and "'attention' and holds grading work" in str(refused.value)
    assert {path: path.read_bytes() for path in course.rglob("*") if path.is_file()} == everything


def test_a_hand_edited_config_is_refused_until_its_settings_move(midterm):
    dist, course = midterm
    config = course / "nbgrader_config.py"
    kit_config = config.read_text()
    config.write_text(kit_config + "\nc.Execute.timeout = 120\n")
    with pytest.raises(PublishRefused, match="nbgrader_config.py: changed since make publish wrote it"):
        publish(dist, ("nbgrader",))
    assert config.read_text().endswith("c.Execute.timeout = 120\n")
    config.write_text(kit_config)  # the setting belongs in course_config.py
    publish(dist, ("nbgrader",))
    assert config.read_text() == kit_config


def test_a_graded_class_is_never_a_publish_target(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "alice.json").write_text("{}")
    (tmp_path / "grades.csv").write_text("submission,total\nalice,100\n")
    with pytest.raises(PublishRefused, match="holds a graded class"):
        publish(tmp_path, ("student",))
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["alice.json", "grades.csv", "results"]


def test_other_parts_replace_only_their_own_files(tmp_path):
    dist = tmp_path / "dist"
    publish(dist, ("student",))
    built = sorted(entry.name for entry in dist.iterdir() if entry.name != publishing.MANIFEST)
    folder = dist / next(name for name in built if (dist / name).is_dir())
    stale = folder / "old_release_file.py"
    stale.write_text("from an older release")
    manifest = publishing.read_manifest(dist)  # an older make publish wrote it, and recorded it
    manifest["files"][stale.relative_to(dist).as_posix()] = publishing.digest(stale)
    publishing.write_manifest(dist, manifest)
    (dist / "README-for-TAs.md").write_text("my own notes")
    # Blind gradebook review (round 6): an instructor's own file inside a folder of the kit's was removed, though
    # the docs say no file the kit did not make is
    (folder / "my_notes.txt").write_text("mine")
    publish(dist, ("student",))
    assert not stale.exists()
    assert (dist / "README-for-TAs.md").read_text() == "my own notes"
    assert (folder / "my_notes.txt").read_text() == "mine"
    assert (dist / "student.zip").is_file()


def test_before_any_submission_changed_cells_are_regenerated_and_students_kept(tmp_path, monkeypatch):
    dist = tmp_path / "dist"
    publish(dist, ("nbgrader",))
    course = dist / "nbgrader"
    (course / "students.csv").write_text("id,first_name,last_name,email\namy,Amy,Adams,\n")
    course_builder.nbgrader(course, "db", "student", "import", "students.csv")
    before = course_builder.assignment_cells(course / "gradebook.db")
    target = next(name for name in sorted(before) if "GradeCell" in before[name]).split(": ", 1)[1]
    original = course_builder.check_cell

    def one_more_point(test):
        cell = original(test)
        if cell["metadata"]["nbgrader"]["grade_id"] == target:
            cell["metadata"]["nbgrader"]["points"] += 1
        return cell

    monkeypatch.setattr(course_builder, "check_cell", one_more_point)
    publish(dist, ("nbgrader",))  # nobody has submitted: the gradebook takes the new cells
    after = course_builder.assignment_cells(course / "gradebook.db")
    changed = [name for name in after if after[name] != before.get(name)]
    assert len(changed) == 1 and after[changed[0]]["GradeCell"] == before[changed[0]]["GradeCell"] + 1
    with closing(sqlite3.connect(f"file:{course / 'gradebook.db'}?mode=ro", uri=True)) as connection:
        assert connection.execute("select id from student").fetchall() == [("amy",)]
