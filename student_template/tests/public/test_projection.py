"""Step 1 (projection): public checks. Run them with `make check STEP=projection`."""

import torch
from grader.check.book import (BOOK_ATOL, INPUTS_3D, INPUTS_3D_SEED100, SEED100_QUERY_2, SEED100_WEIGHTS, SEED123_QUERY_2,
                          seeded_rand_weights)

from grader.check.causes import observation
from grader.check.signatures import holds_rand_draws, init_observation, projection_observation
from grader.check.testing import diagnosed, expect_tensor, fail, graded

ROLES = ("W_query", "W_key", "W_value")

# A printout check weighs little: its printed values could be returned without any of the work. The
# step's property checks carry its points instead (a step's weights add up to its points).
BOOK_WEIGHT = 0.25


def draws(student, d_in, d_out, seed):
    """The fault model's reading of init_qkv_weights: the seeded draws it made, in which order."""
    def probes():
        weights = student.call("init_qkv_weights", d_in, d_out, seed=seed)
        if not (isinstance(weights, tuple) and len(weights) == 3):
            return []
        return init_observation(dict(zip(ROLES, weights)), d_in, d_out, seed)

    return probes


@graded("projection: init_qkv_weights returns three (d_in, d_out) tensors", weight=4.5)
def test_init_shapes(student):
    with diagnosed(draws(student, 5, 3, seed=0)):
        weights = student.call("init_qkv_weights", 5, 3, seed=0)
        assert isinstance(weights, tuple) and len(weights) == 3, (
            "init_qkv_weights should return the tuple (W_query, W_key, W_value)")
        for name, W in zip(ROLES, weights):
            W = expect_tensor(W, name, shape=(5, 3))
            assert ((W >= 0) & (W < 1)).all(), f"{name} has values outside [0, 1), so it is not a torch.rand draw"
            assert W.unique().numel() > 1, f"every entry of {name} is the same, so it is not a torch.rand draw"
        # Numbers that only look like draws (a ramp, a table, values made from the seed) are not: the work is
        # torch.rand after the caller's seed. Any order or arrangement of its draws, or a seed of the function's
        # own, passes here; the hidden check of the draws' order charges those.
        assert holds_rand_draws(weights, 5, 3, 0), (
            "W_query, W_key and W_value do not hold the numbers torch.rand draws after the caller's seed: draw "
            "each with torch.rand(d_in, d_out), with no generator, seed or numbers of your own")


@graded("projection: seed 100 reproduces the chapter's weight matrices", weight=BOOK_WEIGHT, book=True)
def test_init_book_seed100(student):
    with diagnosed(draws(student, 3, 2, seed=100)):
        weights = student.call("init_qkv_weights", 3, 2, seed=100)
        for name, W, printed in zip(ROLES, weights, SEED100_WEIGHTS):
            W = expect_tensor(W, name, shape=(3, 2))
            assert torch.allclose(W.float(), printed, atol=BOOK_ATOL), (
                f"after torch.manual_seed(100), your {name} is not the chapter's")


@graded("projection: project gives the chapter's query for 'journey' (seeds 123 and 100)", weight=BOOK_WEIGHT, book=True)
def test_project_book(student):
    for seed, inputs, printed in ((123, INPUTS_3D, SEED123_QUERY_2), (100, INPUTS_3D_SEED100, SEED100_QUERY_2)):
        weights = seeded_rand_weights(seed, 3, 2)
        with diagnosed(lambda: []):
            result = student.call("project", inputs, *weights)
        assert isinstance(result, tuple) and len(result) == 3, "project should return (queries, keys, values)"
        seen = [projection_observation(result, inputs, weights)]
        with diagnosed(lambda: seen):
            queries = expect_tensor(result[0], "queries", shape=(6, 2))
            assert torch.allclose(queries[1].float(), printed, atol=BOOK_ATOL), (
                f"with seed {seed}, the query of the second token ('journey') differs from the chapter")
            for name, value, W in zip(("keys", "values"), result[1:], weights[1:]):
                value = expect_tensor(value, name, shape=(6, 2))
                if not torch.allclose(value.float(), inputs @ W, atol=1e-5):
                    fail(f"with seed {seed}, your {name} are not x @ {ROLES[1 + ('keys', 'values').index(name)]}",
                         seen)
