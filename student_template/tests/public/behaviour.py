"""Structure confirmed by behaviour: what a module reports about itself earns no points alone.

`describe()` is the student's process speaking about its own modules, and that
process runs the student's code: a report can be patched to say anything. So a
structure check passes only when the module also behaves as that structure
must: each projection's weights change the output, dropout makes training
differ from evaluation; and the mask is a registered buffer.
"""

import torch

from grader.check.student import StudentError
from grader.check.testing import expect_tensor, seeded


def different_weights(weights, seed):
    """The same names and shapes, other values."""
    with seeded(seed):
        return {name: torch.randn(value.shape) * 0.5 for name, value in weights.items()}


def expect_parts_used(module, what, x, weights, mask=True, first_token_dropout=None):
    """Each named weight of `weights` (name -> tensor) loads and changes the output; in training
    dropout changes it, afresh on every call, and evaluation is deterministic; with `mask`, `mask` is
    a registered buffer (checked last: after the output was confirmed to come from the module's parts).
    `first_token_dropout` (a single head's p): the first token attends only to itself, so in training its
    output is 0 (its one weight dropped) or its eval output / (1 - p), as dropout on the weights gives."""
    base = expect_tensor(module.forward(x, weights=weights), f"{what} output")
    assert base.dim() == 3 and tuple(base.shape[:2]) == tuple(x.shape[:2]), f"{what} output should have shape (b, n, d_out)"
    other = different_weights(weights, seed=7)
    restore = {}  # the weight the previous round changed, put back with the next round's change (one round trip)
    for name in weights:
        changed = expect_tensor(module.forward(x, weights={**restore, name: other[name]}), f"{what} output")
        restore = {name: weights[name]}
        assert not torch.allclose(changed.float(), base.float()), (
            f"the output of {what} does not change when {name} changes: forward must use self.{name.split('.')[0]}")
    again = expect_tensor(module.forward(x, weights=restore), f"{what} output")
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
        if first_token_dropout is not None and bool(torch.isfinite(trained).all()):
            first, kept = trained[:, 0].double(), base[:, 0].double() / (1 - first_token_dropout)
            for row in range(first.shape[0]):
                assert (torch.allclose(first[row], torch.zeros_like(first[row]), atol=1e-5)
                        or torch.allclose(first[row], kept[row], rtol=1e-4, atol=1e-5)), (
                    f"in training, the first token's output (sequence {row}) is neither 0 nor its eval-mode output "
                    f"x 1/(1-p): it attends only to itself, so dropout on the attention weights either drops its one "
                    "weight or rescales it; apply self.dropout to attn_weights, nothing else")
    if mask:  # the module's own word (sdpa variants keep the buffer without using it), never enough alone
        try:
            module.fill_buffer("mask", 0.0)
        except StudentError as error:
            if error.not_implemented:
                raise
            raise AssertionError("the mask should be a registered buffer (self.register_buffer('mask', ...)) so "
                                 "that it moves with the module to the GPU") from None
