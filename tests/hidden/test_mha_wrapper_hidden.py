"""Step 6 (mha_wrapper): hidden checks.

The wrapper is judged on its own: its heads are the grader's StandInHead
(same constructor and parameters as CausalAttention, a simpler forward), so a
bug in the student's CausalAttention costs points in its own step, not here.

Points come from behaviour the judge computes itself: it loads weights it
chose into the heads (or draws them as seeded construction would) and compares
what the wrapper and its heads return with the stand-in's output for those
weights. What the student's process reports about its modules (`describe`)
only names a slip, or costs points; it never earns any.
"""

import torch
from .oracle import qkv_params, randn

from grader.check.causes import observation
from grader.check.session import StandInHead, stand_in_output
from grader.check.signatures import crash_observations, heads_outcome
from grader.check.student import StudentError
from grader.check.testing import Failure, expect_close, expect_tensor, fail, graded, named_crashes, seeded

B, N, CONTEXT, D_IN, D_OUT, HEADS = 2, 5, 7, 6, 4, 3
ROLES = ("W_query", "W_key", "W_value")


def build(student, dropout=0.0, qkv_bias=False, seed=0):
    with named_crashes():
        return student.build("MultiHeadAttentionWrapper", D_IN, D_OUT, CONTEXT, dropout, HEADS,
                             qkv_bias=qkv_bias, seed=seed, stand_in_heads=True)


def wrapper_observations(student):
    """The fault model's structure probe on the wrapper: how it keeps its heads (a list, one repeated
    module, identical starts, a chain, the wrong size, layers of its own)."""
    try:
        module = student.build("MultiHeadAttentionWrapper", D_IN, D_OUT, CONTEXT, 0.0, HEADS, seed=9,
                               stand_in_heads=True)
        outcome = heads_outcome(module.describe(), module.state(), HEADS, D_OUT)
    except StudentError as error:
        return crash_observations(error)
    return [observation("heads", outcome)] if outcome else []


def expect_heads(info):
    """self.heads must be a container of HEADS separate modules; name the usual slips."""
    modules = info["modules"]
    if "heads" not in modules:
        containers = [path for path, entry in modules.items() if path and "length" in entry]
        if not containers:
            fail("self.heads is not an nn.Module: PyTorch cannot see the heads", [observation("heads", "list")])
        # the count, not the names: they are the student's to choose, and this message is a hidden check's
        raise AssertionError(f"the wrapper has no `heads` (it holds {len(containers)} other container(s)); name "
                             "the nn.ModuleList of heads self.heads")
    length = modules["heads"].get("length")
    separate = sum(f"heads.{h}" in modules for h in range(HEADS))
    if length == HEADS and separate < HEADS:
        fail(f"self.heads holds {HEADS} entries but only {separate} distinct module(s)",
             [observation("heads", "shared")])
    if modules["heads"].get("class") == "Sequential":
        fail("self.heads is an nn.Sequential", [observation("heads", "sequential")])
    assert length == HEADS, f"self.heads holds {length} heads, expected num_heads={HEADS}"


def head_params(bias=False):
    """Different weights for every head, chosen by the judge."""
    return [qkv_params(D_IN, D_OUT, seed=40 + 7 * h, bias=bias) for h in range(HEADS)]


def stand_in(x, params, context=CONTEXT):
    """The stand-in head's output (eval mode) for these weights, computed here in float64."""
    parts = [(params[f"{role}.weight"].double(), params.get(f"{role}.bias")) for role in ROLES]
    parts = [(weight, None if bias is None else bias.double()) for weight, bias in parts]
    return stand_in_output(x.double(), *parts, context)


def load_heads(module, params):
    """Load each head's weights by name; a wrapper whose heads cannot take them gets its slip named."""
    try:
        module.load({f"heads.{h}.{name}": value for h, head in enumerate(params) for name, value in head.items()})
    except StudentError:
        expect_heads(module.describe())
        raise


def expect_stand_in_heads(module, x, params, what, probes=None):
    """Each head's own output is the stand-in's for the weights it was given (or was drawn with)."""
    outputs = [expect_tensor(module.sub(f"heads.{h}").forward(x), f"the output of heads[{h}]",
                             shape=(x.shape[0], x.shape[1], D_OUT)) for h in range(HEADS)]
    expected = [stand_in(x, head) for head in params]
    close = [[bool(torch.allclose(out.double(), want, atol=1e-4, rtol=1e-4)) for want in expected] for out in outputs]
    if all(close[h][h] for h in range(HEADS)):
        return
    if HEADS > 1 and all(row[-1] for row in close):
        fail(f"every head gives the output of the last head {what}", [observation("heads", "shared")])
    if HEADS > 1 and all(row[0] for row in close):
        fail(f"every head gives the output of the first head {what}", [observation("heads", "same_init")])
    wrong = next(h for h in range(HEADS) if not close[h][h])
    fail(f"heads[{wrong}] does not behave like the CausalAttention the grader provides {what} (the grader replaces "
         "CausalAttention to judge the wrapper on its own: every head must be created by calling "
         "CausalAttention(...) inside __init__, one per head, in order)", list(probes() if probes else ()))


@graded("mha_wrapper: the output is its heads' outputs concatenated along the last axis", weight=3)
def test_concatenation(student):
    module = build(student)
    params = head_params()
    load_heads(module, params)
    x = randn(B, N, D_IN, seed=1)
    heads = [stand_in(x, head) for head in params]
    with named_crashes(lambda: wrapper_observations(student)):
        out = module.forward(x)
    expect_close(out, torch.cat(heads, dim=-1), "wrapper outputs", device=student.device,
                 suspects={"heads_reversed": torch.cat(heads[::-1], dim=-1),
                           "concat_tokens": torch.cat(heads, dim=1), "concat_batch": torch.cat(heads, dim=0),
                           "first_head_only": heads[0], "heads_shared": torch.cat([heads[-1]] * HEADS, dim=-1),
                           "stack_not_cat": torch.stack(heads, dim=-1), "heads_summed": sum(heads)},
                 probes=lambda: wrapper_observations(student))


@graded("mha_wrapper: every head is a separate module with its own weights", weight=2)
def test_separate_heads(student):
    module = build(student)
    info = module.describe()
    expect_heads(info)
    ids = [info["modules"][f"heads.{h}"]["id"] for h in range(HEADS)]
    if len(set(ids)) != HEADS:
        raise Failure("the same CausalAttention object appears several times in self.heads ([module] * num_heads "
                      "repeats one module); create a new one per head", cause="heads_shared")
    params = head_params()
    load_heads(module, params)
    expect_stand_in_heads(module, randn(B, N, D_IN, seed=2), params, "after each head was given its own weights",
                          lambda: wrapper_observations(student))
    # Freshly built heads start from different weights: their outputs differ.
    fresh = build(student, seed=5)
    x = randn(B, N, D_IN, seed=3)
    outputs = [expect_tensor(fresh.sub(f"heads.{h}").forward(x), f"the output of heads[{h}]",
                             shape=(B, N, D_OUT)) for h in range(HEADS)]
    for h in range(1, HEADS):
        if torch.allclose(outputs[0].double(), outputs[h].double()):
            fail(f"heads[0] and heads[{h}] start with the same weights, so they compute the same thing",
                 [observation("heads", "same_init")] + wrapper_observations(student))


def expect_dropout_rate(module, h, x, params, p):
    """In training, the stand-in drops its tanh term with rate p and scales the rest by 1/(1 - p):
    the scale of what survives gives the head's p exactly."""
    eval_out = stand_in(x, params)
    tanh_term = torch.tanh(x.double() @ params["W_query.weight"].double().T + params["W_query.bias"].double())
    trained = expect_tensor(module.sub(f"heads.{h}").forward(x, train=True, seed=11 + h), f"the output of heads[{h}]",
                            shape=tuple(eval_out.shape)).double()
    dropped_term = trained - (eval_out - tanh_term)
    kept = (dropped_term.abs() > 1e-6) & (tanh_term.abs() > 1e-3)
    if not kept.any():
        raise AssertionError(f"heads[{h}] drops everything in training: pass dropout on to every head")
    scale = float((dropped_term[kept] / tanh_term[kept]).median())
    if abs(scale - 1 / (1 - p)) > 1e-3:
        raise Failure(f"heads[{h}] does not use the wrapper's dropout rate {p}: pass dropout on to every head",
                      cause="dropout_not_passed")


@graded("mha_wrapper: heads get d_in, d_out, context_length, dropout and qkv_bias", weight=1)
def test_arguments_passed(student):
    p = 0.25
    module = build(student, dropout=p, qkv_bias=True)
    info = module.describe()
    expect_heads(info)
    modules = info["modules"]
    for h in range(HEADS):
        for role in ROLES:
            entry = modules.get(f"heads.{h}.{role}")
            assert entry, f"heads[{h}] has no {role}"
            if (entry["in_features"], entry["out_features"]) != (D_IN, D_OUT):
                fail(f"heads[{h}].{role} maps {entry['in_features']} -> {entry['out_features']} instead of d_in -> "
                     "d_out", wrapper_observations(student))
            if not entry["bias"]:
                raise Failure(f"heads[{h}].{role} has no bias although qkv_bias=True: pass qkv_bias on",
                              cause="qkv_bias_not_passed")
        dropout = modules.get(f"heads.{h}.dropout")
        if not (dropout and abs(dropout["p"] - p) < 1e-9):
            raise Failure(f"heads[{h}] does not use the wrapper's dropout rate {p}: pass dropout on to every head",
                          cause="dropout_not_passed")
        mask = info["buffers"].get(f"heads.{h}.mask")
        assert mask and mask["shape"] == [CONTEXT, CONTEXT], (
            f"heads[{h}] was not built for context_length={CONTEXT}: pass context_length on to every head")
    # What the report says is confirmed by behaviour: weights of (d_out, d_in) with biases load and are used,
    # context_length shows in the output, and the dropout rate in training.
    params = head_params(bias=True)
    load_heads(module, params)
    expect_stand_in_heads(module, randn(B, N, D_IN, seed=4), params, "with d_in, d_out, context_length and biases",
                          lambda: wrapper_observations(student))
    x = randn(8, N, D_IN, seed=5)
    for h in range(HEADS):
        expect_dropout_rate(module, h, x, params[h], p)


@graded("mha_wrapper: heads are created in order, one CausalAttention after another", weight=1)
def test_construction_order(student):
    module = build(student, seed=123)
    expect_heads(module.describe())
    with seeded(123):
        drawn = [StandInHead(D_IN, D_OUT, CONTEXT, 0.0).state_dict() for _ in range(HEADS)]
    expect_stand_in_heads(module, randn(B, N, D_IN, seed=6), drawn,
                          f"after torch.manual_seed(123) (as the {HEADS} heads created in a row would be)",
                          lambda: wrapper_observations(student))
