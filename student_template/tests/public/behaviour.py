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


def expect_parts_used(module, what, x, weights, mask=True):
    """Each named weight of `weights` (name -> tensor) loads and changes the output; in training
    dropout changes it, and evaluation is deterministic; with `mask`, `mask` is a registered
    buffer (checked last: after the output was confirmed to come from the module's parts)."""
    module.load(weights)
    base = expect_tensor(module.forward(x), f"{what} output")
    assert base.dim() == 3 and tuple(base.shape[:2]) == tuple(x.shape[:2]), f"{what} output should have shape (b, n, d_out)"
    other = different_weights(weights, seed=7)
    for name in weights:
        module.load({name: other[name]})
        changed = expect_tensor(module.forward(x), f"{what} output")
        module.load({name: weights[name]})
        assert not torch.allclose(changed.float(), base.float()), (
            f"the output of {what} does not change when {name} changes: forward must use self.{name.split('.')[0]}")
    again = expect_tensor(module.forward(x), f"{what} output")
    assert torch.equal(again.float(), base.float()), f"{what} in eval mode gives different outputs for the same input"
    trained = module.forward(x, train=True, seed=3)  # NaN allowed here: training only has to differ
    assert not (isinstance(trained, torch.Tensor) and trained.shape == base.shape
                and torch.allclose(trained.float(), base.float())), (
        f"in training, {what} gives the same output as in eval mode: apply self.dropout to the attention weights")
    if mask:  # the module's own word (sdpa variants keep the buffer without using it), never enough alone
        try:
            module.fill_buffer("mask", 0.0)
        except StudentError as error:
            if error.not_implemented:
                raise
            raise AssertionError("the mask should be a registered buffer (self.register_buffer('mask', ...)) so "
                                 "that it moves with the module to the GPU") from None
