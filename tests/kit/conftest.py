"""Shared helpers for the kit's own tests: grade source text through the real judge."""

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader.build.exercises import clean_solution, code_sections, exercise_module, notebook
from grader.judging.judge import Options, grade_submission
from grader.paths import ROOT
from grader.check.suite import discover, max_points


@pytest.fixture(scope="session")
def suite():
    return discover()


@pytest.fixture(scope="session")
def maxima(suite):
    return max_points(suite)


def grade_text(folder, name, text, suite, **options):
    """Write `text` (str or bytes) to folder/name and grade it through the sandboxed judge."""
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return grade_submission(path, Path(name).stem, suite, Options.of(**options))


@pytest.fixture
def grade(tmp_path, suite):
    """grade(text, name="attention.py", **options) -> SubmissionResult for that source."""

    def run(text, name="attention.py", **options):
        return grade_text(tmp_path, name, text, suite, **options)

    return run


@pytest.fixture(scope="session")
def grade_many(tmp_path_factory, suite):
    """grade_many({name: text}) -> {name: SubmissionResult}, two submissions at a time."""
    folder = tmp_path_factory.mktemp("many")

    def run(sources):
        def one(item):
            name, text = item
            return name, grade_text(folder, f"{name}.py", text, suite)

        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(pool.map(one, sources.items()))

    return run


@pytest.fixture(scope="session")
def clean():
    return clean_solution()


# The bug catalogue and the correct variants, graded once per session through the sandboxed judge:
# test_catalogue checks their scores, test_diagnosis the causes their feedback names.
@pytest.fixture(scope="session")
def graded_bugs(grade_many, clean):
    from grader.faults.bugs import BUGS

    return grade_many({bug.id: bug.apply(clean) for bug in BUGS})


@pytest.fixture(scope="session")
def graded_variants(grade_many, clean):
    from grader.faults.variants import VARIANTS

    return grade_many({variant.id: variant.apply(clean) for variant in VARIANTS})


@pytest.fixture(scope="session")
def stub():
    return exercise_module()


@pytest.fixture(scope="session")
def solution_notebook(clean):
    return notebook(code_sections(clean))


@pytest.fixture(scope="session")
def otter_dist(tmp_path_factory):
    """`make publish`'s student and otter parts, built once per session into a temporary dist/."""
    from grader.integrations.publish import publish

    folder = tmp_path_factory.mktemp("dist")
    publish(folder, parts=("student", "otter"))
    return folder
