"""Shared helpers for the kit's own tests: grade source text through the real judge."""

import fcntl
import os
import pickle
import signal
import subprocess
import sys
import traceback
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


@pytest.fixture
def grader_cli(capfd, monkeypatch):
    """grader_cli(*args, cwd=None, env=None) -> CompletedProcess: `python -m grader ARGS` run in this process by
    grader.cli.main, with its exit status, stdout and stderr as a launch would give them (the file descriptors,
    so that a fork's output is caught too). A launch costs an interpreter and a torch import, seconds each: use
    this for commands that stop before grading (a refused argument, roster, overrides, archive or slice) or
    that never grade (merge, report). What needs the real process (its signals and exit, a class graded by
    its judges and their sandbox) launches `python -m grader`."""
    from grader import cli, stopping

    def run(*args, cwd=None, env=None):
        argv = [str(arg) for arg in args]
        handlers = {number: signal.getsignal(number) for number in stopping.SIGNALS}
        capfd.readouterr()  # what the test printed before is not the command's
        with monkeypatch.context() as patch:
            if cwd is not None:
                patch.chdir(cwd)
            if env is not None:
                for key in set(os.environ) - set(env):
                    patch.delenv(key)
                for key, value in env.items():
                    patch.setenv(key, value)
            try:
                status = cli.main(argv)
            except SystemExit as stop:  # argparse: usage errors exit 2 (sys.exit("text") prints it, status 1)
                status = stop.code if isinstance(stop.code, int) or stop.code is None else 1
                if isinstance(stop.code, str):
                    print(stop.code, file=sys.stderr)
            except Exception:  # as `python -m grader` would: the traceback on stderr, status 1
                traceback.print_exc()
                status = 1
            finally:  # the command's stop handlers (grader.stopping) were for its process, not for pytest's
                for number, handler in handlers.items():
                    signal.signal(number, handler)
                stopping.reset()
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess([sys.executable, "-m", "grader", *argv], status or 0, out, err)

    return run


@pytest.fixture(scope="session")
def clean():
    return clean_solution()


def once_per_run(tmp_path_factory, name, produce):
    """produce(), once for the whole test run. Under pytest-xdist (`make test` runs two files at a time) each
    worker process has its own session, so a session fixture's work would be done once per worker that needs it:
    the first worker to ask does it under a lock and leaves a pickle for the others, in the run's shared
    temporary folder (the one above each worker's own)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return produce()
    shared = tmp_path_factory.getbasetemp().parent
    cache = shared / f"{name}.pickle"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if produce() raises
        if cache.exists():
            return pickle.loads(cache.read_bytes())
        value = produce()
        partial = cache.with_suffix(".partial")  # a worker killed while writing leaves no half pickle to read
        partial.write_bytes(pickle.dumps(value))
        os.replace(partial, cache)
        return value


# The bug catalogue and the correct variants, graded once per run through the sandboxed judge:
# test_catalogue checks their scores, test_diagnosis the causes their feedback names.
@pytest.fixture(scope="session")
def graded_bugs(tmp_path_factory, grade_many, clean):
    from grader.faults.bugs import BUGS

    return once_per_run(tmp_path_factory, "graded_bugs",
                        lambda: grade_many({bug.id: bug.apply(clean) for bug in BUGS}))


@pytest.fixture(scope="session")
def graded_variants(tmp_path_factory, grade_many, clean):
    from grader.faults.variants import VARIANTS

    return once_per_run(tmp_path_factory, "graded_variants",
                        lambda: grade_many({variant.id: variant.apply(clean) for variant in VARIANTS}))


@pytest.fixture(scope="session")
def stub():
    return exercise_module()


@pytest.fixture(scope="session")
def solution_notebook(clean):
    return notebook(code_sections(clean))


@pytest.fixture(scope="session")
def otter_dist(tmp_path_factory):
    """`make publish`'s student and otter parts, built once per run into a temporary dist/ (read, never changed)."""
    from grader.integrations.publish import publish

    def build():
        folder = tmp_path_factory.mktemp("dist")
        publish(folder, parts=("student", "otter"))
        return folder

    return once_per_run(tmp_path_factory, "otter_dist", build)


# ------------------------------------------------------------------------------ the fast tier
# `make test` runs everything; `make test-fast` runs what is not marked `slow` (pytest -m "not slow"), meant to
# take under three minutes. A test is slow when it grades a whole class or a catalogue, launches `python -m grader`,
# check.py, make, Otter or nbgrader as processes (each a torch import), or builds a release. A test says so with
# @pytest.mark.slow(reason=...) (or a module's pytestmark); the lists below mark the rest, one reason each:
# tests that are slow because of a fixture they use, and modules (or tests) whose files carry no mark of their own.
# tests/kit/test_tiers.py checks that every slow mark has a reason and that every name below exists.
SLOW_FIXTURES = {
    "graded_bugs": "grades every catalogued bug through the sandboxed judge (once per session)",
    "graded_variants": "grades every correct variant of the catalogue through the sandboxed judge",
    "otter_dist": "builds the student release and the Otter autograder (make publish PARTS='student otter')",
    "folder_run": "a class run of 17 bad files through `python -m grader grade`",
    "zip_run": "a class run of a zip of hazards through `python -m grader grade`",
    "canvas_out": "a class run of a Canvas download through `python -m grader grade`",
    "moodle_out": "a class run of a Moodle download through `python -m grader grade`",
    "graded_cohort": "grades the 40-file integrity cohort through `python -m grader grade`",
    "class_run": "grades the notebook corpus as a class through `python -m grader grade`",
    "graded_class": "a class run with a roster and overrides through `python -m grader grade`",
    "cluster": "a class graded whole and in slices through `python -m grader` and make, in a kit copy",
}
SLOW = {
    "test_hostile_battery.py": "grades the hostile battery as classes in every sandbox mode (python -m grader)",
    "test_hostile.py": "grades dozens of attacks through the sandboxed judge, and class runs of forged results",
    "test_learners_heldout.py": "grades the 105 files of the held-out learner set through the sandboxed judge",
    "test_learners_heldout2.py": "grades the 60 files of the second held-out learner set through the sandboxed judge",
    "test_learners_heldout3.py": "grades the 51 files of the third held-out learner set through the sandboxed judge",
    "test_learners_heldout4.py": "grades the 64 files of the fourth held-out learner set through the sandboxed judge",
    "test_learners_heldout5.py": "grades the 44 files of the fifth held-out learner set through the sandboxed judge",
    "test_device_labels.py::test_held_out_variants_pass_every_check_when_their_answers_come_from_the_gpu":
        "runs every check on the 67 correct files of the four held-out learner sets",
    "test_device_labels.py::test_a_bug_is_told_the_same_on_the_gpu_as_on_the_cpu":
        "runs every check twice (answers labelled CPU and GPU) on a fifth of the bug catalogue",
    "test_bulk.py": "class runs through `python -m grader`, killed midway and resumed",
    "test_stopping.py": "signals real `python -m grader` class runs at random moments",
    "test_isolation.py": "processes escaping the real sandbox, graded as root and as another user",
    "test_engine_parity.py": "`otter run` and `nbgrader autograde` for real, beside the kit's grades",
    "test_feedback_families.py": "`python check.py STEP FILE` in a built release, once per family of mistakes",
    "test_grading.py::test_cli_sample_class": "grades the sample class through `python -m grader grade`",
    "test_diagnosis.py::test_the_diagnose_report_runs_on_a_sample_of_each_split": "grades a sample of every split",
    "test_seal.py::test_a_run_says_which_protections_were_on_and_can_refuse_to_grade_without_them":
        "three class runs through `python -m grader grade`, one with the seccomp filter blocked",
    "test_seal.py::test_a_grader_killed_midway_leaves_no_submission_running":
        "kills a real `python -m grader` class run midway",
}
KIT = Path(__file__).parent


def slow_reason(item):
    """Why `item` is slow by the lists above, or None."""
    if item.path.parent != KIT:
        return None
    named = SLOW.get(item.path.name) or SLOW.get(f"{item.path.name}::{getattr(item, 'originalname', item.name)}")
    return named or next((SLOW_FIXTURES[name] for name in item.fixturenames if name in SLOW_FIXTURES), None)


# The kit's longest test files, longest first (their tests and fixtures together, from `make test`'s --durations
# on the 2-core machine: 240 s down to 45 s). `make test` hands files to its workers in collection order
# (--no-loadscope-reorder: pytest-xdist would otherwise start the files with the most tests first, which put
# test_otter, test_engine_parity and test_publish_safety, a few tests of minutes each, at the end), one to each
# worker, then the next to whichever is free: longest first, no long file is the last one running alone on an
# otherwise idle machine. Order only: every test still runs, and each file's tests in their own order.
LONGEST_FIRST = ("test_hostile_battery.py", "test_engine_parity.py", "test_otter.py", "test_bulk.py",
                 "test_publish_safety.py", "test_catalogue.py", "test_shards_scheduler.py", "test_stopping.py",
                 "test_hostile.py", "test_nbgrader_flow.py", "test_seal.py", "test_release.py", "test_io.py",
                 "test_feedback_families.py")


def longest_first(item):
    name = item.path.name if item.path.parent == KIT else None
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


COLLECTED = pytest.StashKey[list]()  # every test collected, before -m deselects any (tests/kit/test_tiers.py)


@pytest.fixture(scope="session")
def tiers(request):
    """The lists above and every test this session collected, for tests/kit/test_tiers.py."""
    return {"slow": SLOW, "slow_fixtures": SLOW_FIXTURES, "longest_first": LONGEST_FIRST,
            "collected": request.config.stash.get(COLLECTED, [])}


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m deselection reads the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        reason = slow_reason(item)
        if reason and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow(reason=reason))
    items.sort(key=longest_first)  # stable: the other files, and each file's tests, keep their order
    config.stash[COLLECTED] = list(items)
