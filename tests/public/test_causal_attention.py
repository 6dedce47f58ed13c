"""Step 5 (causal_attention): public checks. Run them with `make check STEP=causal_attention`."""

import torch
from grader.check.book import CAUSAL_SEED123, book_batch, expect_book_batch

from grader.check.testing import expect_tensor, graded, seeded


@graded("causal_attention: reproduces the chapter (seed 123)", weight=2)
def test_book(student):
    module = student.build("CausalAttention", 3, 2, 6, 0.0, seed=123)
    expect_book_batch(module.forward(book_batch()), CAUSAL_SEED123, "CausalAttention output",
                      "Check the construction order (W_query, W_key, W_value as nn.Linear(d_in, d_out, "
                      "bias=qkv_bias), in that order, nothing random before them), the mask (hide j > i with -inf), "
                      "the scaling by sqrt(d_k) and the softmax over dim=-1")


@graded("causal_attention: output has shape (b, n, d_out) for n < context_length", weight=1)
def test_shape(student):
    with seeded(0):
        x = torch.randn(3, 6, 5)
    out = student.build("CausalAttention", 5, 4, 8, 0.0, seed=0).forward(x)
    expect_tensor(out, "CausalAttention output for 3 sequences of 6 tokens", shape=(3, 6, 4))


@graded("causal_attention: has W_query, W_key, W_value, dropout and a mask buffer", weight=2)
def test_structure(student):
    info = student.build("CausalAttention", 5, 4, 8, 0.1, seed=0).describe()
    modules = info["modules"]
    for role in ("W_query", "W_key", "W_value"):
        entry = modules.get(role)
        assert entry and entry["class"] == "Linear", f"{role} should be an nn.Linear attribute"
        assert (entry["in_features"], entry["out_features"], entry["bias"]) == (5, 4, False), (
            f"{role} should be nn.Linear(d_in, d_out, bias=qkv_bias); yours maps {entry['in_features']} -> "
            f"{entry['out_features']} with bias={entry['bias']}")
    dropout = modules.get("dropout")
    assert dropout and dropout["class"] == "Dropout", "self.dropout should be an nn.Dropout"
    assert abs(dropout["p"] - 0.1) < 1e-9, f"self.dropout has p={dropout['p']}, expected the dropout argument 0.1"
    assert "mask" in info["buffers"], (
        "the mask should be a registered buffer (self.register_buffer('mask', ...)) so that it moves "
        "with the module to the GPU" + (", not a plain attribute" if "mask" in info["plain_tensors"] else ""))
