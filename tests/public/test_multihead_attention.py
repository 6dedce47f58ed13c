"""Step 7 (multihead_attention): public checks. Run them with `make check STEP=multihead_attention`."""

import torch
from grader.check.book import MHA_SEED123, book_batch, expect_book_batch

from grader.check.student import StudentError
from grader.check.testing import expect_tensor, graded, seeded


@graded("multihead_attention: reproduces the chapter (seed 123)", weight=2)
def test_book(student):
    module = student.build("MultiHeadAttention", 3, 2, 6, 0.0, 2, seed=123)
    expect_book_batch(module.forward(book_batch()), MHA_SEED123, "MultiHeadAttention output",
                      "Check the construction order (W_query, W_key, W_value, then out_proj = nn.Linear(d_out, "
                      "d_out), nothing random before them), the split into heads (view, then transpose(1, 2)), the "
                      "merge (transpose back, then view) and out_proj")


@graded("multihead_attention: output has shape (b, n, d_out)", weight=1)
def test_shape(student):
    with seeded(0):
        x = torch.randn(3, 7, 5)
    out = student.build("MultiHeadAttention", 5, 8, 9, 0.0, 2, seed=0).forward(x)
    expect_tensor(out, "MultiHeadAttention output for 3 sequences of 7 tokens", shape=(3, 7, 8))


@graded("multihead_attention: rejects d_out not divisible by num_heads", weight=1)
def test_rejects_bad_split(student):
    try:
        student.build("MultiHeadAttention", 5, 6, 8, 0.0, 4, seed=0)
    except StudentError as error:
        if error.not_implemented or error.info.get("missing_name"):
            raise  # no class to judge yet: an error for the wrong reason earns nothing
        return
    raise AssertionError("MultiHeadAttention(d_in=5, d_out=6, ..., num_heads=4) should raise an error: "
                         "6 features cannot be split into 4 equal heads")


@graded("multihead_attention: has W_query, W_key, W_value, out_proj, dropout and a mask buffer", weight=1)
def test_structure(student):
    info = student.build("MultiHeadAttention", 5, 8, 9, 0.2, 2, seed=0).describe()
    modules = info["modules"]
    for role, shape in (("W_query", (5, 8)), ("W_key", (5, 8)), ("W_value", (5, 8)), ("out_proj", (8, 8))):
        entry = modules.get(role)
        assert entry and entry["class"] == "Linear", f"{role} should be an nn.Linear attribute"
        assert (entry["in_features"], entry["out_features"]) == shape, (
            f"{role} should map {shape[0]} -> {shape[1]} features; yours maps "
            f"{entry['in_features']} -> {entry['out_features']}")
    dropout = modules.get("dropout")
    assert dropout and dropout["class"] == "Dropout" and abs(dropout["p"] - 0.2) < 1e-9, (
        "self.dropout should be nn.Dropout(dropout)")
    assert "mask" in info["buffers"], "the mask should be a registered buffer (self.register_buffer('mask', ...))"
