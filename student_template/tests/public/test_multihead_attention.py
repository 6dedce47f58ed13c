"""Step 7 (multihead_attention): public checks. Run them with `make check STEP=multihead_attention`."""

import torch
from grader.check.book import MHA_SEED123, book_batch, expect_book_batch

from grader.check.causes import heads_scrambled, observation
from grader.check.signatures import Battery, Dims, battery_observations, module_observations
from grader.check.student import StudentError
from grader.check.testing import diagnosed, expect_computed_from, expect_tensor, fail, graded, once, seeded

from .behaviour import expect_mask_kept_as_buffer, expect_parts_used, expect_to_follow_its_input

# A printout check weighs little: its printed values could be returned without any of the work. The
# step's property checks carry its points instead (a step's weights add up to its points).
BOOK_WEIGHT = 0.25
# The public probes' sizes: head_dim 6 >= 5 tokens (weights read through one-hot values), and every wrong scale
# differs: sqrt(6), 1, 6, sqrt(7) (d_in), sqrt(12) (d_out), sqrt(2) (heads), sqrt(5) (tokens).
DIMS = Dims(d_in=7, d_out=12, n=5, heads=2, context=7, batch=3)


def public_probes(student, dropout=False):
    """The fault model's probes on MultiHeadAttention, on public sizes."""
    return once(lambda: module_observations(student, "MultiHeadAttention", DIMS, dropout=dropout))


@graded("multihead_attention: reproduces the chapter (seed 123)", weight=BOOK_WEIGHT, book=True)
def test_book(student):
    with diagnosed(public_probes(student)):
        module = student.build("MultiHeadAttention", 3, 2, 6, 0.0, 2, seed=123)
        expect_book_batch(module.forward(book_batch()), MHA_SEED123, "MultiHeadAttention output", "")


@graded("multihead_attention: output has shape (b, n, d_out)", weight=0.75)
def test_shape(student):
    with seeded(0):
        x = torch.randn(3, 7, 5)
    with diagnosed(public_probes(student)):
        module = student.build("MultiHeadAttention", 5, 8, 9, 0.0, 2, seed=0)
        out = expect_tensor(module.forward(x), "MultiHeadAttention output for 3 sequences of 7 tokens", shape=(3, 7, 8))
        other = expect_tensor(module.forward(x.flip(1)), "MultiHeadAttention output", shape=(3, 7, 8))
        expect_computed_from(out, other, "MultiHeadAttention's output", "its input's tokens change order")


@graded("multihead_attention: rejects d_out not divisible by num_heads", weight=1)
def test_rejects_bad_split(student):
    # Sizes that split build (a constructor that refuses everything refuses nothing for a reason)...
    student.build("MultiHeadAttention", 5, 8, 8, 0.0, 4, seed=0)
    try:  # ... and these do not
        student.build("MultiHeadAttention", 5, 6, 8, 0.0, 4, seed=0)
    except StudentError as error:
        if error.not_implemented or error.info.get("missing_name"):
            raise  # no class to judge yet: an error for the wrong reason earns nothing
        return
    fail("MultiHeadAttention(d_in=5, d_out=6, ..., num_heads=4) should raise an error: 6 features cannot be split "
         "into 4 equal heads", [observation("cause", "no_divisibility_check")])


@graded("multihead_attention: has W_query, W_key, W_value, out_proj, dropout and a mask buffer", weight=1)
def test_structure(student):
    with diagnosed(public_probes(student)):
        check_structure(student)


def check_structure(student):
    module = student.build("MultiHeadAttention", 5, 8, 9, 0.2, 2, seed=0)
    info = module.describe()
    modules = info["modules"]
    for role, shape in (("W_query", (5, 8)), ("W_key", (5, 8)), ("W_value", (5, 8)), ("out_proj", (8, 8))):
        entry = modules.get(role)
        assert entry and "in_features" in entry, f"{role} should be an nn.Linear attribute"  # (or a subclass)
        assert (entry["in_features"], entry["out_features"]) == shape, (
            f"{role} should map {shape[0]} -> {shape[1]} features; yours maps "
            f"{entry['in_features']} -> {entry['out_features']}")
    dropout = modules.get("dropout")
    assert dropout and "p" in dropout and abs(dropout["p"] - 0.2) < 1e-9, (
        "self.dropout should be nn.Dropout(dropout)")
    buffer = expect_mask_kept_as_buffer(info)
    with seeded(1):
        x = torch.randn(8, 9, 5)  # context_length tokens
        weights = {f"{role}.weight": torch.randn(8, 5) * 0.5 for role in ("W_query", "W_key", "W_value")}
        weights["out_proj.weight"] = torch.randn(8, 8) * 0.5
    expect_parts_used(module, "MultiHeadAttention", x, weights, mask=buffer, first_token=(0.2, 2))
    expect_to_follow_its_input(student, "MultiHeadAttention", (5, 8, 9, 0.2, 2), x[:2, :7])


@graded("multihead_attention: every head's weights sum to one, hide exactly the future and use sqrt(head_dim)",
        weight=1)
def test_weights(student):
    probes = public_probes(student)
    with diagnosed(probes):
        seen = battery_observations(student, "MultiHeadAttention", DIMS, ("attention",))
        if any(item["probe"] == "eval" for item in seen):  # two calls on one input differ: nothing can be read
            fail("MultiHeadAttention in eval mode gives different outputs for the same input, so its attention weights "
                 "cannot be read", probes())
        if not any(item["probe"] == "rows" for item in seen):  # no weights were read: say why (a crash, a shape)
            Battery(student, "MultiHeadAttention", DIMS).weights()
            if heads_scrambled(seen):
                fail("with every score equal, each head's average of the values is not where it belongs in the "
                     "output", probes())  # the layout probe's reading names the scramble
            fail("the output of MultiHeadAttention(d_in, d_out, ...) does not have the shape (b, n, d_out)", probes())
        wrong = [item for item in seen if item["probe"] in ("rows", "temperature", "pattern", "causality", "batch",
                                                            "lengths") and item["outcome"] != "ok"]
        if wrong:
            fail("the attention weights of every head (read through one-hot values) are not softmax(masked scores "
                 "/ sqrt(head_dim))", probes())


@graded("multihead_attention: dropout acts on every head's attention weights, only while training", weight=1)
def test_dropout(student):
    probes = public_probes(student, dropout=True)
    with diagnosed(probes):
        x = torch.ones(2, DIMS.n, DIMS.d_in)
        module = student.build("MultiHeadAttention", DIMS.d_in, DIMS.d_out, DIMS.context, 0.3, DIMS.heads, seed=0)
        module.forward(x, train=True, seed=1)
        seen = [seen for seen in battery_observations(student, "MultiHeadAttention", DIMS, ("dropout",))
                if seen["probe"] in ("eval", "rate", "rescale", "layout", "target")]
        wrong = [item for item in seen if item["outcome"] != "ok"]
        if wrong or not any(item["probe"] == "rate" for item in seen):
            fail("in training mode, dropout does not drop a share p of every head's attention weights and rescale "
                 "the rest by 1/(1-p), or it is active in eval mode", probes())

