"""Structure confirmed by behaviour: what a module reports about itself earns no points alone.

`describe()` is the student's process speaking about its own modules, and that
process runs the student's code: a report can be patched to say anything. So a
structure check passes only when the module also behaves as that structure
must: each projection's weights change the output, dropout makes training
differ from evaluation; and a mask the module keeps is a registered buffer. A module may also build its
mask in forward (for the tokens it gets, on their device): then its outputs judge it, as they do everything.
"""

import itertools

import torch

from grader.check.signatures import mask_buffer_outcome, plain_tensors_left_behind
from grader.check.student import StudentError
from grader.check.testing import expect_tensor, seeded


def different_weights(weights, seed):
    """The same names and shapes, other values."""
    with seeded(seed):
        return {name: torch.randn(value.shape) * 0.5 for name, value in weights.items()}


def expect_parts_used(module, what, x, weights, mask=True, first_token=None):
    """Each named weight of `weights` (name -> tensor) loads and changes the output; in training
    dropout changes it, afresh on every call, and evaluation is deterministic; with `mask`, `mask` is
    a registered buffer (checked last: after the output was confirmed to come from the module's parts).
    `first_token` (p, heads): in training, the first token's output is one that dropout on the attention
    weights can give (see `expect_first_token_dropout`)."""
    base = expect_tensor(module.forward(x, weights=weights), f"{what} output")
    assert base.dim() == 3 and tuple(base.shape[:2]) == tuple(x.shape[:2]), f"{what} output should have shape (b, n, d_out)"
    other = different_weights(weights, seed=7)
    restore = {}  # the weight the previous round changed, put back with the next round's change (one round trip)
    for name in weights:
        changed = expect_tensor(module.forward(x, weights={**restore, name: other[name]}), f"{what} output",
                                shape=base.shape)
        restore = {name: weights[name]}
        assert not torch.allclose(changed.float(), base.float()), (
            f"the output of {what} does not change when {name} changes: forward must use self.{name.split('.')[0]}")
    again = expect_tensor(module.forward(x, weights=restore), f"{what} output", shape=base.shape)
    assert torch.equal(again.float(), base.float()), f"{what} in eval mode gives different outputs for the same input"
    trained = module.forward(x, train=True, seed=3)  # NaN allowed here: training only has to differ
    assert not (isinstance(trained, torch.Tensor) and trained.shape == base.shape
                and torch.allclose(trained.float(), base.float())), (
        f"in training, {what} gives the same output as in eval mode: apply self.dropout to the attention weights")
    if isinstance(trained, torch.Tensor) and trained.shape == base.shape:
        other_draw = module.forward(x, train=True, seed=4)
        assert not (isinstance(other_draw, torch.Tensor) and torch.equal(other_draw.nan_to_num(7.0),
                                                                         trained.nan_to_num(7.0))), (
            f"in training, {what} gives the same output for two different seeds: dropout draws a new mask on "
            "every call (self.dropout, an nn.Dropout, applied to the attention weights)")
        if first_token is not None and bool(torch.isfinite(trained).all()):
            expect_first_token_dropout(trained, base, x, weights, *first_token)
    if mask:  # the module's own word (sdpa variants keep the buffer without using it), never enough alone
        try:
            module.fill_buffer("mask", 0.0)
        except StudentError as error:
            if error.not_implemented:
                raise
            raise AssertionError("the mask should be a registered buffer (self.register_buffer('mask', ...)) so "
                                 "that it moves with the module to the GPU") from None


def expect_mask_kept_as_buffer(info):
    """Whether the module keeps a `mask` (the chapter's register_buffer('mask', ...)); an AssertionError where it
    keeps one otherwise: as a plain attribute, .to(device) leaves it behind; as an nn.Parameter, it trains. A
    module that keeps no mask builds it in forward, which the chapter allows as long as the outputs are right
    on every device and for every length up to context_length: the behaviour checks judge that."""
    outcome = mask_buffer_outcome(info)
    if outcome == "parameter":
        raise AssertionError("the mask should be a registered buffer (self.register_buffer('mask', ...)), not an "
                             "nn.Parameter: an optimiser would train it")
    if outcome == "attribute":
        names = ", ".join(f"self.{name}" for name in plain_tensors_left_behind(info))
        raise AssertionError("the mask should be a registered buffer (self.register_buffer('mask', ...)) so that "
                             f"it moves with the module to the GPU, not a plain attribute ({names})")
    return outcome == "ok"


# What PyTorch says when a tensor made on the CPU meets one on another device (a GPU's words, and the grader's
# stand-in for them: check.session.DevicesMixed). Other errors say nothing of devices.
DEVICES_MIXED = ("is not on the expected device cpu", "Expected all tensors to be on the same device")


def expect_to_follow_its_input(student, name, args, x):
    """A forward that makes a tensor on the CPU (the mask, built in forward with torch.ones(n, n)) fails on a GPU:
    run as if the module and its input were on another device, a CPU-only grading sees it too (a blind TA's file
    built its mask so and kept every point on the CPU)."""
    module = student.build(name, *args, seed=0)
    try:
        module.forward_elsewhere(x)
    except StudentError as error:
        said = error.info["message"]
        if "cpu" in said and any(marker in said for marker in DEVICES_MIXED):
            where = f" ({error.info['location']})" if error.info["location"] else ""
            raise AssertionError(f"{name}.forward makes a tensor on the CPU that then meets its input's device{where}: "
                                 "with the module and its input on a GPU it fails. Create it on the input's device "
                                 "(torch.ones(n, n, device=x.device)), or register the mask as a buffer "
                                 "(self.register_buffer), which moves with the module") from None


def first_token_changes(x, weights, p, heads):
    """(b, 2**heads, d): what dropout on the attention weights can add to the first token's eval output.

    The first token attends only to itself: in each head its one weight is 1, so in training it is dropped
    (the head gives 0) or kept and scaled by 1/(1-p). Head h alone gives u_h, the first token's values in
    that head's columns (through `out_proj.weight` where the module has one), so a training output is the
    eval output plus sum_h (keep_h / (1-p) - 1) u_h for one choice of the heads kept. out_proj's bias (not
    injected) is in both and cancels."""
    values = x[:, 0].double() @ weights["W_value.weight"].double().T  # (b, d_out)
    head_dim = values.shape[-1] // heads
    alone = []
    for head in range(heads):
        part = torch.zeros_like(values)
        part[:, head * head_dim:(head + 1) * head_dim] = values[:, head * head_dim:(head + 1) * head_dim]
        alone.append(part @ weights["out_proj.weight"].double().T if "out_proj.weight" in weights else part)
    scales = itertools.product((0.0, 1.0 / (1 - p)), repeat=heads)
    return torch.stack([sum((scale - 1) * part for scale, part in zip(keep, alone)) for keep in scales], dim=1)


def expect_first_token_dropout(trained, base, x, weights, p, heads):
    """In training, each sequence's first-token output is its eval output plus one of `first_token_changes`.
    Judged only where the eval output of the first token is the chapter's (its values through out_proj,
    plus one bias for every sequence): a module that already differs there (a head split, a mask) fails
    the checks made for that, never this one."""
    trained, base = trained[:, 0].double(), base[:, 0].double()
    changes = first_token_changes(x, weights, p, heads)
    offset = base + changes[:, 0]  # dropping every head leaves out_proj's bias alone (0 without out_proj)
    if not torch.allclose(offset, offset[:1].expand_as(offset), rtol=1e-4, atol=1e-4):
        return
    for row in range(trained.shape[0]):
        assert any(torch.allclose(trained[row] - base[row], change, rtol=1e-4, atol=1e-5) for change in changes[row]), (
            f"in training, the first token's output (sequence {row}) is not what dropout on the attention weights "
            "gives: it attends only to itself, so in each head its one weight is either dropped or scaled by "
            "1/(1-p); apply self.dropout to the attention weights, and nothing else")
