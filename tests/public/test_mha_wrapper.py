"""Step 6 (mha_wrapper): public checks. Run them with `make check STEP=mha_wrapper`.

The wrapper is judged on its own: its heads are built from a simple stand-in
for CausalAttention (same constructor and parameters, a simpler forward), so
the result does not depend on the state of your CausalAttention.
"""

import torch

from grader.check.testing import expect_tensor, graded, seeded


@graded("mha_wrapper: output has shape (b, n, num_heads * d_out)", weight=2)
def test_shape(student):
    with seeded(0):
        x = torch.randn(2, 6, 5)
    module = student.build("MultiHeadAttentionWrapper", 5, 4, 8, 0.0, 3, seed=0, stand_in_heads=True)
    out = module.forward(x)
    expect_tensor(out, "wrapper output for 2 sequences of 6 tokens with 3 heads of size 4", shape=(2, 6, 12))


@graded("mha_wrapper: heads is an nn.ModuleList of num_heads CausalAttention modules", weight=1)
def test_structure(student):
    modules = student.build("MultiHeadAttentionWrapper", 5, 4, 8, 0.0, 3, seed=0,
                            stand_in_heads=True).describe()["modules"]
    heads = modules.get("heads")
    assert heads and heads["class"] == "ModuleList", (
        "self.heads should be an nn.ModuleList (a plain list hides the heads' parameters from PyTorch)")
    assert heads["length"] == 3, f"with num_heads=3, self.heads should hold 3 modules, yours holds {heads['length']}"
    for i in range(3):
        assert modules[f"heads.{i}"]["class"] == "CausalAttention", (
            f"heads[{i}] is a {modules[f'heads.{i}']['class']}; each head is a CausalAttention(...)")
