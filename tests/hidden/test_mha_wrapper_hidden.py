"""Step 6 (mha_wrapper): hidden checks.

The wrapper is judged on its own: its heads are the grader's StandInHead
(same constructor and parameters as CausalAttention, a simpler forward), so a
bug in the student's CausalAttention costs points in its own step, not here.
"""

import torch
from .oracle import randn

from grader.check.session import StandInHead
from grader.check.testing import Failure, expect_close, expect_tensor, graded, seeded

B, N, CONTEXT, D_IN, D_OUT, HEADS = 2, 5, 7, 6, 4, 3


def build(student, dropout=0.0, qkv_bias=False, seed=0):
    return student.build("MultiHeadAttentionWrapper", D_IN, D_OUT, CONTEXT, dropout, HEADS,
                         qkv_bias=qkv_bias, seed=seed, stand_in_heads=True)


def expect_heads(info):
    """self.heads must be a container of HEADS separate modules; name the usual slips."""
    modules = info["modules"]
    if "heads" not in modules:
        containers = [path for path, entry in modules.items() if path and "length" in entry]
        if not containers:
            raise Failure("self.heads is not an nn.Module: PyTorch cannot see the heads (a plain Python list?); "
                          "keep them in an nn.ModuleList", cause="heads_not_modulelist")
        raise AssertionError(f"the wrapper has no `heads` (found {', '.join(containers)}); name the "
                             "nn.ModuleList of heads self.heads")
    length = modules["heads"].get("length")
    separate = sum(f"heads.{h}" in modules for h in range(HEADS))
    if length == HEADS and separate < HEADS:
        raise Failure(f"self.heads holds {HEADS} entries but only {separate} distinct module(s): "
                      "[CausalAttention(...)] * num_heads repeats one head; create a new CausalAttention per head",
                      cause="heads_shared")
    assert length == HEADS, f"self.heads holds {length} heads, expected num_heads={HEADS}"


@graded("mha_wrapper: the output is its heads' outputs concatenated along the last axis", weight=3)
def test_concatenation(student):
    module = build(student)
    expect_heads(module.describe())
    x = randn(B, N, D_IN, seed=1)
    heads = [expect_tensor(module.sub(f"heads.{h}").forward(x), f"the output of heads[{h}]") for h in range(HEADS)]
    expected = torch.cat(heads, dim=-1)
    expect_close(module.forward(x), expected, "wrapper outputs", device=student.device,
                 advice="return torch.cat([head(x) for head in self.heads], dim=-1)",
                 suspects={"heads_reversed": torch.cat(heads[::-1], dim=-1),
                           "concat_tokens": torch.cat(heads, dim=1), "concat_batch": torch.cat(heads, dim=0),
                           "first_head_only": heads[0]})


@graded("mha_wrapper: every head is a separate module with its own weights", weight=2)
def test_separate_heads(student):
    module = build(student)
    info = module.describe()
    expect_heads(info)
    ids = [info["modules"][f"heads.{h}"]["id"] for h in range(HEADS)]
    if len(set(ids)) != HEADS:
        raise Failure("the same CausalAttention object appears several times in self.heads ([module] * num_heads "
                      "repeats one module); create a new one per head", cause="heads_shared")
    state = module.state()
    for role in ("W_query", "W_key", "W_value"):
        first = expect_tensor(state.get(f"heads.0.{role}.weight"), f"heads[0].{role}.weight")
        for h in range(1, HEADS):
            other = expect_tensor(state.get(f"heads.{h}.{role}.weight"), f"heads[{h}].{role}.weight")
            assert not torch.equal(first, other), (
                f"heads[0] and heads[{h}] start with the same {role} weights; each head must be initialised "
                "independently so that the heads can learn different things")


@graded("mha_wrapper: heads get d_in, d_out, context_length, dropout and qkv_bias", weight=1)
def test_arguments_passed(student):
    info = build(student, dropout=0.25, qkv_bias=True).describe()
    expect_heads(info)
    modules = info["modules"]
    for h in range(HEADS):
        for role in ("W_query", "W_key", "W_value"):
            entry = modules.get(f"heads.{h}.{role}")
            assert entry, f"heads[{h}] has no {role}"
            assert (entry["in_features"], entry["out_features"]) == (D_IN, D_OUT), (
                f"heads[{h}].{role} maps {entry['in_features']} -> {entry['out_features']}; pass d_in and d_out "
                "to every CausalAttention")
            if not entry["bias"]:
                raise Failure(f"heads[{h}].{role} has no bias although qkv_bias=True: pass qkv_bias on",
                              cause="qkv_bias_not_passed")
        dropout = modules.get(f"heads.{h}.dropout")
        if not (dropout and abs(dropout["p"] - 0.25) < 1e-9):
            raise Failure(f"heads[{h}] does not use the wrapper's dropout rate 0.25: pass dropout on to every head",
                          cause="dropout_not_passed")
        mask = info["buffers"].get(f"heads.{h}.mask")
        assert mask and mask["shape"] == [CONTEXT, CONTEXT], (
            f"heads[{h}] was not built for context_length={CONTEXT}: pass context_length on to every head")


@graded("mha_wrapper: heads are created in order, one CausalAttention after another", weight=1)
def test_construction_order(student):
    module = build(student, seed=123)
    expect_heads(module.describe())
    state = module.state()
    with seeded(123):
        expected = [StandInHead(D_IN, D_OUT, CONTEXT, 0.0).state_dict() for _ in range(HEADS)]
    for h in range(HEADS):
        for role in ("W_query", "W_key", "W_value"):
            mine = expect_tensor(state.get(f"heads.{h}.{role}.weight"), f"heads[{h}].{role}.weight")
            assert torch.equal(mine.float(), expected[h][f"{role}.weight"]), (
                f"after torch.manual_seed(123), heads[{h}] is not the {h + 1}-th CausalAttention created in a "
                "row: build the heads with one CausalAttention(...) per head, in order, and nothing random "
                "in between")
