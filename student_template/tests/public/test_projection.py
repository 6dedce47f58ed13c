"""Step 1 (projection): public checks. Run them with `make check STEP=projection`."""

import torch
from grader.check.book import (BOOK_ATOL, INPUTS_3D, INPUTS_3D_SEED100, SEED100_QUERY_2, SEED100_WEIGHTS, SEED123_QUERY_2,
                          seeded_rand_weights)

from grader.check.testing import expect_tensor, graded

ORDER_ADVICE = ("draw W_query, then W_key, then W_value, each with torch.rand(d_in, d_out), "
                "and draw nothing else from the generator in between")


@graded("projection: init_qkv_weights returns three (d_in, d_out) tensors", weight=2)
def test_init_shapes(student):
    weights = student.call("init_qkv_weights", 5, 3, seed=0)
    assert isinstance(weights, tuple) and len(weights) == 3, (
        "init_qkv_weights should return the tuple (W_query, W_key, W_value)")
    for name, W in zip(("W_query", "W_key", "W_value"), weights):
        W = expect_tensor(W, name, shape=(5, 3))
        assert ((W >= 0) & (W < 1)).all(), f"{name} has values outside [0, 1): draw it with torch.rand, not torch.randn"


@graded("projection: seed 100 reproduces the chapter's weight matrices", weight=2)
def test_init_book_seed100(student):
    weights = student.call("init_qkv_weights", 3, 2, seed=100)
    for name, W, printed in zip(("W_query", "W_key", "W_value"), weights, SEED100_WEIGHTS):
        W = expect_tensor(W, name, shape=(3, 2))
        assert torch.allclose(W.float(), printed, atol=BOOK_ATOL), (
            f"after torch.manual_seed(100), your {name} is not the chapter's; {ORDER_ADVICE}")


@graded("projection: project gives the chapter's query for 'journey' (seeds 123 and 100)", weight=1)
def test_project_book(student):
    for seed, inputs, printed in ((123, INPUTS_3D, SEED123_QUERY_2), (100, INPUTS_3D_SEED100, SEED100_QUERY_2)):
        W_query, W_key, W_value = seeded_rand_weights(seed, 3, 2)
        result = student.call("project", inputs, W_query, W_key, W_value)
        assert isinstance(result, tuple) and len(result) == 3, "project should return (queries, keys, values)"
        queries = expect_tensor(result[0], "queries", shape=(6, 2))
        assert torch.allclose(queries[1].float(), printed, atol=BOOK_ATOL), (
            f"with seed {seed}, the query of the second token ('journey') differs from the chapter; "
            "queries are x @ W_query, returned first")
        for name, value in zip(("keys", "values"), result[1:]):
            expect_tensor(value, name, shape=(6, 2))
