"""Step 5 (causal_attention): public checks. Run them with `make check STEP=causal_attention`."""

import torch
from grader.check.book import CAUSAL_SEED123, book_batch, expect_book_batch

from grader.check.signatures import Battery, Dims, battery_observations, module_observations
from grader.check.testing import diagnosed, expect_computed_from, expect_tensor, fail, graded, once, seeded

from .behaviour import expect_mask_kept_as_buffer, expect_parts_used, expect_to_follow_its_input

# A printout check weighs little: its printed values could be returned without any of the work. The
# step's property checks carry its points instead (a step's weights add up to its points).
BOOK_WEIGHT = 0.25
# The public probes' sizes: every wrong scale differs (sqrt(5), 1, 5, sqrt(7) for d_in, 2 for the tokens).
DIMS = Dims(d_in=7, d_out=5, n=4, context=6, batch=3)


def public_probes(student, dropout=False):
    """The fault model's probes on CausalAttention, on public sizes."""
    return once(lambda: module_observations(student, "CausalAttention", DIMS, dropout=dropout))


@graded("causal_attention: reproduces the chapter (seed 123)", weight=BOOK_WEIGHT, book=True)
def test_book(student):
    with diagnosed(public_probes(student)):
        module = student.build("CausalAttention", 3, 2, 6, 0.0, seed=123)
        expect_book_batch(module.forward(book_batch()), CAUSAL_SEED123, "CausalAttention output", "")


@graded("causal_attention: output has shape (b, n, d_out) for n < context_length", weight=0.75)
def test_shape(student):
    with seeded(0):
        x = torch.randn(3, 6, 5)
    with diagnosed(public_probes(student)):
        module = student.build("CausalAttention", 5, 4, 8, 0.0, seed=0)
        out = expect_tensor(module.forward(x), "CausalAttention output for 3 sequences of 6 tokens", shape=(3, 6, 4))
        other = expect_tensor(module.forward(x.flip(1)), "CausalAttention output", shape=(3, 6, 4))
        expect_computed_from(out, other, "CausalAttention's output", "its input's tokens change order")


@graded("causal_attention: has W_query, W_key, W_value, dropout and a mask buffer", weight=2)
def test_structure(student):
    with diagnosed(public_probes(student)):
        check_structure(student)


def check_structure(student):
    module = student.build("CausalAttention", 5, 4, 8, 0.1, seed=0)
    info = module.describe()
    modules = info["modules"]
    for role in ("W_query", "W_key", "W_value"):
        entry = modules.get(role)
        assert entry and "in_features" in entry, f"{role} should be an nn.Linear attribute"  # (or a subclass)
        assert (entry["in_features"], entry["out_features"], entry["bias"]) == (5, 4, False), (
            f"{role} should be nn.Linear(d_in, d_out, bias=qkv_bias); yours maps {entry['in_features']} -> "
            f"{entry['out_features']} with bias={entry['bias']}")
    dropout = modules.get("dropout")
    assert dropout and "p" in dropout, "self.dropout should be an nn.Dropout"
    assert abs(dropout["p"] - 0.1) < 1e-9, f"self.dropout has p={dropout['p']}, expected the dropout argument 0.1"
    buffer = expect_mask_kept_as_buffer(info)
    with seeded(1):
        # context_length tokens; 32 sequences: dropout on the outputs leaves a first token's 4 features all kept
        # in a sequence 66 % of the time, in all 8 sequences once in 30 (then this check passed it)
        x = torch.randn(32, 8, 5)
        weights = {f"{role}.weight": torch.randn(4, 5) * 0.5 for role in ("W_query", "W_key", "W_value")}
    expect_parts_used(module, "CausalAttention", x, weights, mask=buffer, first_token=(0.1, 1))
    expect_to_follow_its_input(student, "CausalAttention", (5, 4, 8, 0.1), x[:2, :6])


@graded("causal_attention: attention weights sum to one, hide exactly the future and use sqrt(d_k)", weight=1)
def test_weights(student):
    probes = public_probes(student)
    with diagnosed(probes):
        seen = battery_observations(student, "CausalAttention", DIMS, ("attention",))
        if any(item["probe"] == "eval" for item in seen):  # two calls on one input differ: nothing can be read
            fail("CausalAttention in eval mode gives different outputs for the same input, so its attention weights "
                 "cannot be read", probes())
        if not any(item["probe"] == "rows" for item in seen):  # no weights were read: say why (a crash, a shape)
            Battery(student, "CausalAttention", DIMS).weights()
            fail("the output of CausalAttention(d_in, d_out, ...) does not have the shape (b, n, d_out)", probes())
        wrong = [item for item in seen if item["probe"] in ("rows", "temperature", "pattern", "causality", "batch",
                                                            "lengths") and item["outcome"] != "ok"]
        if wrong:
            fail("the attention weights (read through one-hot values) are not softmax(masked scores / sqrt(d_k))",
                 probes())


@graded("causal_attention: dropout acts on the attention weights, only while training", weight=1)
def test_dropout(student):
    probes = public_probes(student, dropout=True)
    with diagnosed(probes):
        x = torch.ones(2, DIMS.n, DIMS.d_in)
        module = student.build("CausalAttention", DIMS.d_in, DIMS.d_out, DIMS.context, 0.3, seed=0)
        module.forward(x, train=True, seed=1)
        seen = [seen for seen in battery_observations(student, "CausalAttention", DIMS, ("dropout",))
                if seen["probe"] in ("eval", "rate", "rescale", "layout", "target")]
        wrong = [item for item in seen if item["outcome"] != "ok"]
        if wrong or not any(item["probe"] == "rate" for item in seen):
            fail("in training mode, dropout does not drop a share p of the attention weights of every sequence "
                 "and rescale the rest by 1/(1-p), or it is active in eval mode", probes())

