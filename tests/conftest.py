"""pytest wiring for the public and hidden tests.

The `student` fixture is the student's submission loaded in this interpreter
(`SUBMISSION=path`, default `exercises/attention.py`). Each graded test is
also marked with its step, so `pytest -m masking` runs one step.
"""

import gc
import os

# As `python -m grader` sets them (grader/__main__.py), before torch loads OpenMP: tests fork judges from the
# pytest process, and a fork after a parallel region left a judge spinning in a matmul (a loaded CI run).
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402

from grader.chapter import STEP_KEYS  # noqa: E402
from grader.check.student import in_process  # noqa: E402

# Everything imported so far (torch above all) lives as long as the run: out of the collector's
# sight, the collections pytest runs when it finishes take milliseconds instead of half a second.
gc.freeze()


def pytest_addoption(parser):
    parser.addoption("--submission", default=None, help="the .py or .ipynb to test (default exercises/attention.py)")


def pytest_configure(config):
    for key in STEP_KEYS:
        config.addinivalue_line("markers", f"{key}: tests of the {key} step")
    config.addinivalue_line("markers", "kit: the kit's own tests")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped where there is none")
    config.addinivalue_line("markers", "slow(reason): left out of `make test-fast` (pytest -m 'not slow'); the reason "
                                       "says what costs the time (tests/kit/conftest.py lists the rest)")


def pytest_collection_modifyitems(items):
    for item in items:
        info = getattr(getattr(item, "function", None), "graded", None)
        if info:
            item.add_marker(getattr(pytest.mark, info["step"]))


@pytest.fixture(scope="session")
def student(request):
    path = request.config.getoption("--submission") or os.environ.get("SUBMISSION") or "exercises/attention.py"
    loaded, problems = in_process(path, device=os.environ.get("DEVICE", "cpu"))
    for problem in problems:
        print(f"note: {problem}")
    return loaded
