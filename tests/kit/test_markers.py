"""solutions/attention.py's markers are read strictly: a malformed one stops `make student` with file and line."""

import pytest

from grader.markers import MarkerError, regions
from grader.build.exercises import stub_source
from grader.paths import SOLUTION


def test_the_solution_has_one_region_per_stub_and_every_step():
    found = regions(SOLUTION.read_text())
    assert len(found) >= 7 and {region.step for region in found} >= {"projection", "multihead_attention"}
    assert all(region.begin < region.end for region in found)


@pytest.mark.parametrize("text, where, words", [
    ("def f():\n    ### BEGIN SOLUTION\n    return 1\n", ":2:", "never closed"),
    ("def f():\n    return 1\n    ### END SOLUTION\n", ":3:", "without a"),
    ("def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    ### END SOLUTION\n    ### END SOLUTION\n",
     ":3:", "cannot nest"),
    ("# %% step: maskng\ndef f():\n    pass\n", ":1:", "not a step"),
    ("def f():\n    ## BEGIN SOLUTION\n    return 1\n", ":2:", "exactly"),
    ("def f():\n    ### BEGIN SOLUTION\n# %% step: masking\n    ### END SOLUTION\n", ":3:", "inside the solution"),
])
def test_malformed_markers_are_errors_naming_file_and_line(text, where, words):
    with pytest.raises(MarkerError) as caught:
        stub_source(text)
    assert f"solutions/attention.py{where}" in str(caught.value) and words in str(caught.value)
