"""What the kit's tests are written with: the `graded` marker and assertions that teach.

Every assertion says what differed and what to check, in the chapter's words,
and never prints a hidden expected value: only positions, counts and the
student's own numbers.
"""

import contextlib
import math
import threading

import torch

from .steps import step_of_test_name
from .wire import Foreign

# (absolute, relative) tolerances per device: float32 on CPU is exact to ~1e-6 here;
# GPU kernels reorder sums, so they get more slack.
TOLERANCES = {"cpu": (1e-5, 1e-4), "cuda": (1e-4, 1e-3)}


_SEED_LOCK = threading.RLock()


@contextlib.contextmanager
def seeded(seed):
    """`torch.manual_seed(seed)` for the block, safely: the judge grades several
    submissions in threads that share torch's global generator, so seeded
    sections take turns and leave the generator as they found it."""
    with _SEED_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def tolerance(device):
    return TOLERANCES["cuda" if str(device).startswith("cuda") else "cpu"]


def graded(name, points):
    """Mark a test function as graded: `@graded("masking: rows sum to one", points=2)`."""
    step = step_of_test_name(name)

    def mark(function):
        function.graded = {"name": name, "step": step, "points": points}
        return function

    return mark


def fmt_index(index):
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def expect_tensor(value, what, shape=None, device=None):
    """`value` must be a plain tensor (of `shape`, on `device`); returns it as a CPU float64 tensor."""
    if isinstance(value, Foreign):
        advice = "convert with torch.from_numpy(...)" if "numpy" in value.type_name else "return a torch.Tensor"
        raise AssertionError(f"{what} should be a torch.Tensor, but your code returned a {value.type_name}; {advice}")
    if isinstance(value, (list, tuple)):
        raise AssertionError(f"{what} should be a torch.Tensor, but your code returned a {type(value).__name__} "
                             f"of {len(value)} items; build one tensor (torch.stack / torch.cat) instead")
    if not isinstance(value, torch.Tensor):
        raise AssertionError(f"{what} should be a torch.Tensor, but your code returned {type(value).__name__}")
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise AssertionError(f"{what} has shape {tuple(value.shape)}, expected {tuple(shape)}")
    student_device = getattr(value, "wire_device", "cpu")
    if device is not None and torch.device(student_device).type != torch.device(device).type:
        raise AssertionError(f"{what} is on {student_device}, but the input was on {device}; "
                             "create new tensors with device=x.device (or register them as buffers)")
    if not value.dtype.is_floating_point and value.dtype != torch.bool:
        value = value.to(torch.float64)
    bad = ~torch.isfinite(value.double()) if value.dtype != torch.bool else torch.zeros_like(value)
    if bad.any():
        where = fmt_index(bad.nonzero()[0].tolist())
        kind = "NaN" if torch.isnan(value.double()).any() else "inf"
        raise AssertionError(f"{what} contains {kind} (first at {where}); a row whose every score is -inf "
                             "gives NaN after softmax: does your mask hide the diagonal or the past?")
    return value.double() if value.dtype != torch.bool else value


def mismatch(actual, expected, atol, rtol):
    """Boolean tensor of entries that differ beyond tolerance."""
    return ~torch.isclose(actual.double(), expected.double(), atol=atol, rtol=rtol)


def expect_close(actual, expected, what, device="cpu", advice="", suspects=None):
    """`actual` must match `expected` within the device's tolerance.

    `suspects` maps a likely cause ("softmax over the query axis (dim=-2)") to
    what the reference would give with that fault: if the student's output
    matches one, the message names the cause.
    """
    atol, rtol = tolerance(device)
    actual = expect_tensor(actual, what, shape=expected.shape)
    wrong = mismatch(actual, expected, atol, rtol)
    if not wrong.any():
        return
    message = (f"{what} differ from the reference at {int(wrong.sum())} of {wrong.numel()} entries "
               f"(first at {fmt_index(wrong.nonzero()[0].tolist())}; tolerance atol={atol:g}, rtol={rtol:g})")
    for cause, suspect in (suspects or {}).items():
        if suspect.shape == actual.shape and not mismatch(actual, suspect, atol, rtol).any():
            message += f"; your output matches what {cause} gives"
            break
    else:
        if advice:
            message += f"; {advice}"
    raise AssertionError(message)


def expect_rows_sum_to_one(weights, what, device="cpu"):
    """Every row (last axis) of attention weights sums to one; say what is wrong if not."""
    weights = expect_tensor(weights, what)
    atol, _ = tolerance(device)
    sums = weights.sum(dim=-1)
    wrong = (sums - 1).abs() > 10 * atol
    if not wrong.any():
        return
    index = wrong.nonzero()[0].tolist()
    value = sums[tuple(index)].item()
    row = f"row {index[-1]}" + (f" (batch {fmt_index(index[:-1])})" if len(index) > 1 else "")
    hint = weight_fault_hint(weights, device)
    raise AssertionError(f"{row} of {what} sums to {value:.4g}, but attention weights sum to one along each row"
                         + (f"; {hint}" if hint else ""))


def weight_fault_hint(weights, device="cpu"):
    """Name the common fault behind weights whose rows do not sum to one, if it shows."""
    atol, _ = tolerance(device)
    sums = weights.sum(dim=-1)
    if weights.dim() >= 2 and ((weights.sum(dim=-2) - 1).abs() < 10 * atol).all():
        return "each column sums to one instead: the softmax was taken over the query axis; normalise each row (dim=-1)"
    constant = sums.flatten()[0].item()
    if ((sums - constant).abs() < 10 * atol).all() and 0 < constant < 1:
        root = 1 / constant**2
        if abs(root - round(root)) < 1e-3:
            return (f"every row sums to {constant:.4g} = 1/sqrt({round(root)}): "
                    "the division by sqrt(d_k) happens after the softmax; scale the scores before it")
        return "every row sums to the same constant: is something multiplying the weights after the softmax?"
    return "was the softmax taken over the last axis (dim=-1), and after the masking?"


def expect_future_hidden(weights, what, device="cpu"):
    """Entries above the diagonal (the future) must be zero."""
    weights = expect_tensor(weights, what)
    n = weights.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    leaks = (weights.abs() > tolerance(device)[0]) & future
    if leaks.any():
        index = leaks.nonzero()[0].tolist()
        raise AssertionError(f"{what}: token {index[-2]} attends to the future token {index[-1]} "
                             f"(entry {fmt_index(index)} is {weights[tuple(index)].item():.4g}, should be 0); "
                             "mask everything strictly above the diagonal")
    diagonal = torch.diagonal(weights, dim1=-2, dim2=-1)
    if (diagonal.abs() <= tolerance(device)[0]).all():
        raise AssertionError(f"{what}: every token gives itself zero weight; the causal mask must hide only "
                             "positions strictly above the diagonal (torch.triu(..., diagonal=1))")


def scalar(value, what):
    """A Python float from a number or a 0-d tensor."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.reshape(()).item())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise AssertionError(f"{what} should be a number, but your code returned {type(value).__name__}")


def close_enough(a, b, rel):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)

