"""Step 1 (projection): hidden checks."""

from .oracle import randn
from .probes import ROLES, check_draws

from grader.check.signatures import projection_observation
from grader.check.testing import expect_close, graded, named_crashes


@graded("projection: init_qkv_weights draws W_query, W_key, W_value in that order with torch.rand", weight=2)
def test_init_draw_order(student):
    weights = student.call("init_qkv_weights", 6, 4, seed=7)
    assert isinstance(weights, tuple) and len(weights) == 3, "return the tuple (W_query, W_key, W_value)"
    check_draws(dict(zip(ROLES, weights)), 6, 4, seed=7, what="")


def check_project(student, x, weights):
    with named_crashes():
        result = student.call("project", x, *weights)
    assert isinstance(result, tuple) and len(result) == 3, "project should return (queries, keys, values)"
    expected = [x.double() @ W.double() for W in weights]
    seen = [projection_observation(result, x, weights)]
    for name, got, want in zip(("queries", "keys", "values"), result, expected):
        expect_close(got, want, f"{name} for x of shape {tuple(x.shape)}", device=student.device,
                     probes=lambda: seen)


@graded("projection: project matches x @ W for batched and single sequences", weight=3)
def test_project_batched(student):
    check_project(student, randn(2, 4, 5, seed=5), [randn(5, 5, seed=s) for s in (6, 7, 8)])
    W_query, W_key, W_value = (randn(5, 3, seed=s) for s in (1, 2, 3))
    for shape in ((4, 5), (2, 4, 5), (2, 3, 4, 5)):
        check_project(student, randn(*shape, seed=4), [W_query, W_key, W_value])
