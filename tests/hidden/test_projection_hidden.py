"""Step 1 (projection): hidden checks."""

import torch
from oracle import randn

from grader.testing import expect_close, expect_tensor, graded, seeded


@graded("projection: init_qkv_weights draws W_query, W_key, W_value in that order with torch.rand", points=2)
def test_init_draw_order(student):
    with seeded(7):
        expected = [torch.rand(6, 4) for _ in range(3)]
    weights = student.call("init_qkv_weights", 6, 4, seed=7)
    assert isinstance(weights, tuple) and len(weights) == 3, "return the tuple (W_query, W_key, W_value)"
    got = [expect_tensor(W, name, shape=(6, 4)) for name, W in zip(("W_query", "W_key", "W_value"), weights)]
    for index, name in enumerate(("W_query", "W_key", "W_value")):
        if torch.allclose(got[index].float(), expected[index]):
            continue
        for other, other_name in enumerate(("first", "second", "third")):
            if torch.allclose(got[index].float(), expected[other]):
                raise AssertionError(f"{name} is the {other_name} torch.rand draw; draw W_query first, then W_key, "
                                     "then W_value")
        raise AssertionError(f"{name} is not a torch.rand(d_in, d_out) draw made in the order query, key, value "
                             "(right after the caller's torch.manual_seed)")


@graded("projection: project matches x @ W for batched and single sequences", points=3)
def test_project_batched(student):
    W_query, W_key, W_value = (randn(5, 3, seed=s) for s in (1, 2, 3))
    for shape in ((4, 5), (2, 4, 5), (2, 3, 4, 5)):
        x = randn(*shape, seed=4)
        result = student.call("project", x, W_query, W_key, W_value)
        assert isinstance(result, tuple) and len(result) == 3, "project should return (queries, keys, values)"
        expected = [x.double() @ W.double() for W in (W_query, W_key, W_value)]
        for name, got, want in zip(("queries", "keys", "values"), result, expected):
            others = {f"using the {o} weights for the {name}": e
                      for o, e in zip(("query", "key", "value"), expected) if e is not want}
            expect_close(got, want, f"{name} for x of shape {shape}", device=student.device,
                         advice="each projection is x @ W (x on the left; W has shape (d_in, d_out))",
                         suspects=others)
