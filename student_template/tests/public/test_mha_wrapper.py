"""Step 6 (mha_wrapper): public checks. Run them with `make check STEP=mha_wrapper`.

The wrapper is judged on its own: its heads are built from a simple stand-in
for CausalAttention (same constructor and parameters, a simpler forward), so
the result does not depend on the state of your CausalAttention.
"""

import torch

from grader.check.session import StandInHead
from grader.check.causes import observation
from grader.check.signatures import wrapper_observations
from grader.check.testing import diagnosed, expect_computed_from, expect_tensor, fail, graded, once, seeded


def public_probes(student):
    """The fault model's probes on the wrapper (with the grader's stand-in heads), on public sizes."""
    return once(lambda: wrapper_observations(student, 5, 4, 8, 3))


@graded("mha_wrapper: output has shape (b, n, num_heads * d_out)", weight=2)
def test_shape(student):
    with seeded(0):
        x = torch.randn(2, 6, 5)
    with diagnosed(public_probes(student)):
        module = student.build("MultiHeadAttentionWrapper", 5, 4, 8, 0.0, 3, seed=0, stand_in_heads=True)
        out = expect_tensor(module.forward(x), "wrapper output for 2 sequences of 6 tokens with 3 heads of size 4",
                            shape=(2, 6, 12))
        other = expect_tensor(module.forward(x.flip(1)), "wrapper output", shape=(2, 6, 12))
        expect_computed_from(out, other, "the wrapper's output", "its input's tokens change order")


@graded("mha_wrapper: heads is an nn.ModuleList of num_heads CausalAttention modules", weight=1)
def test_structure(student):
    with diagnosed(public_probes(student)):
        check_structure(student)


def check_structure(student):
    module = student.build("MultiHeadAttentionWrapper", 5, 4, 8, 0.0, 3, seed=0, stand_in_heads=True)
    modules = module.describe()["modules"]
    heads = modules.get("heads")
    if heads is None and any(path and "length" in entry for path, entry in modules.items()):
        fail("the checks read the heads from self.heads, and your wrapper keeps them under another name: name "
             "its nn.ModuleList of heads self.heads", [])
    assert heads and heads["class"] == "ModuleList", (
        "self.heads should be an nn.ModuleList (a plain list hides the heads' parameters from PyTorch)")
    assert heads["length"] == 3, f"with num_heads=3, self.heads should hold 3 modules, yours holds {heads['length']}"
    distinct = [i for i in range(3) if f"heads.{i}" in modules]  # a module held twice is listed once
    if len(distinct) < 3:
        fail(f"self.heads holds 3 entries but only {len(distinct)} distinct module(s): every head must be a "
             "CausalAttention object of its own", [observation("heads", "shared")])
    for i in range(3):
        assert modules[f"heads.{i}"]["class"] == "CausalAttention", (
            f"heads[{i}] is a {modules[f'heads.{i}']['class']}; each head is a CausalAttention(...)")
    # What the report says is confirmed by behaviour: each head takes weights by name and computes as the
    # CausalAttention the grader provides does.
    with seeded(1):
        heads = [StandInHead(5, 4, 8, 0.0) for _ in range(3)]
        x = torch.randn(2, 6, 5)
    module.load({f"heads.{i}.{name}": value for i, head in enumerate(heads) for name, value in head.named_parameters()})
    for i, head in enumerate(heads):
        out = expect_tensor(module.sub(f"heads.{i}").forward(x), f"the output of heads[{i}]", shape=(2, 6, 4))
        with torch.no_grad():
            assert torch.allclose(out.float(), head(x), atol=1e-5), (
                f"heads[{i}] does not compute as the CausalAttention the grader provides: create every head by "
                "calling CausalAttention(...) inside __init__ (a default argument or a saved reference keeps your "
                "own class)")
