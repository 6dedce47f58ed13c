"""What the kit's tests are written with: the `graded` marker and assertions that teach.

Every assertion says what differed and what to check, in the chapter's words,
and never prints a hidden expected value: only positions, counts and the
student's own numbers. A check that recognises a known mistake raises a
`Failure` naming its cause (a key of `grader.check.causes.CAUSES`), and checks of
attention weights attach the student's weights as plain numbers for a heatmap.
"""

import contextlib
import math
import threading

import torch

from grader.check.causes import CAUSES
from grader.chapter import step_of_test_name
from grader.check.wire import Foreign

# (absolute, relative) tolerances per device: float32 on CPU is exact to ~1e-6 here;
# GPU kernels reorder sums, so they get more slack.
TOLERANCES = {"cpu": (1e-5, 1e-4), "cuda": (1e-4, 1e-3)}

# An output that is this many times closer to a known fault's output than to the
# reference (in the largest deviation) is taken to show that fault.
SIGNATURE_RATIO = 0.05

PICTURE_SIZE = 12  # the largest attention matrix drawn in the feedback (top-left corner of bigger ones)


class Failure(AssertionError):
    """A failed check that also says its most likely cause and carries plain data for a picture.

    `cause` is a key of grader.check.causes.CAUSES; `kind` is the strength of the evidence:
    "signature" (the output equals what a known fault gives) or "property" (a check
    whose failure has one meaning).
    """

    def __init__(self, message, cause=None, kind="property", picture=None, error=None):
        super().__init__(message)
        self.details = {}
        if cause:
            if cause not in CAUSES:
                raise KeyError(f"unknown cause {cause!r}: add it to grader.check.causes.CAUSES")
            self.details.update(cause=cause, kind=kind)
        if picture:
            self.details["picture"] = picture
        if error:
            self.details["error"] = error


def details_of(error):
    """What the judge keeps of a failed check besides its message, as plain data:
    the cause and picture of a Failure, the student's exception of a StudentError."""
    details = dict(getattr(error, "details", None) or {})
    info = getattr(error, "info", None)
    if isinstance(info, dict) and "error" not in details:
        details["error"] = {key: info.get(key) for key in ("type", "message", "location")}
    return details


_SEED_LOCK = threading.RLock()


@contextlib.contextmanager
def seeded(seed):
    """`torch.manual_seed(seed)` for the block, safely: the judge grades several
    submissions in threads that share torch's global generator, so seeded
    sections take turns and leave the generator as they found it."""
    with _SEED_LOCK, torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)  # the judge's tensors are all on the CPU
        yield


def tolerance(device):
    return TOLERANCES["cuda" if str(device).startswith("cuda") else "cpu"]


def graded(name, weight=1):
    """Mark a test function as graded: `@graded("masking: rows sum to one", weight=2)`.

    The weight is relative: a step's points (grader.chapter) are shared out among its
    tests, public and hidden, in proportion to their weights."""
    step = step_of_test_name(name)

    def mark(function):
        function.graded = {"name": name, "step": step, "weight": weight}
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
        cause = nan_rows_cause(value)
        if cause:
            rows = {"mask_hides_diagonal": "the first token", "mask_past": "the last token",
                    "softmax_dim": "every token but the last (a softmax over the batch axis meets only -inf there)"}
            raise Failure(f"{what} contains NaN exactly in the rows of {rows[cause]} (first at {where}); "
                          f"{CAUSES[cause].title}; {CAUSES[cause].fix}", cause=cause)
        raise AssertionError(f"{what} contains {kind} (first at {where}); a row whose every score is -inf "
                             "gives NaN after softmax: does your mask hide the diagonal or the past?")
    return value.double() if value.dtype != torch.bool else value


def nan_rows_cause(value):
    """The mistake behind NaN rows, when the pattern has one meaning: NaN in exactly the first
    token's row of every sequence (nothing visible to it: the diagonal is hidden), in exactly
    the last token's row (the past is hidden instead of the future), or in every row but the
    last (a softmax across the batch, where the future is -inf in every sequence)."""
    if value.dim() < 2 or value.dtype == torch.bool:
        return None
    n = value.shape[-2]
    rows = torch.isnan(value.double()).reshape(-1, n, value.shape[-1]).any(dim=-1)
    first, last = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
    first[0], last[-1] = True, True
    if bool((rows == first).all()):
        return "mask_hides_diagonal"
    if bool((rows == last).all()):
        return "mask_past"
    if n > 1 and rows.shape[0] > 1 and bool((rows == ~last).all()):
        return "softmax_dim"
    return None


def mismatch(actual, expected, atol, rtol):
    """Boolean tensor of entries that differ beyond tolerance."""
    return ~torch.isclose(actual.double(), expected.double(), atol=atol, rtol=rtol)


def expect_close(actual, expected, what, device="cpu", advice="", suspects=None, picture=None):
    """`actual` must match `expected` within the device's tolerance.

    `suspects` maps a cause (a key of grader.check.causes.CAUSES) to what the judge's
    reference gives with that fault, on the same inputs (a dict, or (cause, tensor) pairs, which may be
    computed lazily: they are walked only when the output is wrong): when the student's output
    equals one (or is far closer to it than to the reference), the failure names
    that cause. `picture` ("causal" or "full") attaches the student's weights for a
    heatmap when `actual` are attention weights.
    """
    atol, rtol = tolerance(device)
    suspects = suspects or {}
    actual = expect_tensor(actual, what, device=device)
    if tuple(actual.shape) != tuple(expected.shape):
        cause, _ = match_suspect(actual, None, suspects, atol, rtol)
        message = f"{what} has shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
        if cause:
            raise Failure(f"{message}; that is the shape a known mistake gives: {CAUSES[cause].title}; "
                          f"{CAUSES[cause].fix}", cause=cause, kind="signature")
        raise AssertionError(message)
    wrong = mismatch(actual, expected, atol, rtol)
    if not wrong.any():
        return
    first = wrong.nonzero()[0].tolist()
    message = (f"{what} differ from the reference at {int(wrong.sum())} of {wrong.numel()} entries "
               f"(first at {fmt_index(first)}; tolerance atol={atol:g}, rtol={rtol:g})")
    image = None
    if picture and actual.dim() >= 2 and actual.shape[-1] == actual.shape[-2]:
        image = weights_picture(actual[tuple(first[:-2])], what, causal=picture == "causal",
                                where=fmt_index(first[:-2]) if len(first) > 2 else "")
    cause, exact = match_suspect(actual, expected, suspects, atol, rtol)
    if cause:
        verb = "matches" if exact else "is very close to"
        message += f"; your output {verb} what a known mistake gives: {CAUSES[cause].title}; {CAUSES[cause].fix}"
        raise Failure(message, cause=cause, kind="signature", picture=image)
    if advice:
        message += f"; {advice}"
    raise Failure(message, picture=image)


def match_suspect(actual, expected, suspects, atol, rtol):
    """(cause, exact): the known fault whose output equals the student's, or, failing that, the one
    the student's output is far closer to than to the reference; (None, False) when none fits."""
    best, best_ratio = None, SIGNATURE_RATIO
    off = (actual - expected.double()).abs().max().item() if expected is not None else math.inf
    for cause, suspect in (suspects.items() if hasattr(suspects, "items") else suspects):
        if cause not in CAUSES:
            raise KeyError(f"unknown cause {cause!r}: add it to grader.check.causes.CAUSES")
        if tuple(suspect.shape) != tuple(actual.shape):
            continue
        if not mismatch(actual, suspect, atol, rtol).any():
            return cause, True
        if math.isfinite(off) and off > 0:
            ratio = (actual - suspect.double()).abs().max().item() / off
            if ratio < best_ratio:
                best, best_ratio = cause, ratio
    return best, False


def expect_rows_sum_to_one(weights, what, device="cpu", causal=None):
    """Every row (last axis) of attention weights sums to one; say what is wrong if not.
    `causal`: whether the weights should hide the future (None: judge by the weights)."""
    weights = expect_tensor(weights, what)
    atol, _ = tolerance(device)
    sums = weights.sum(dim=-1)
    wrong = (sums - 1).abs() > 10 * atol
    if not wrong.any():
        return
    index = wrong.nonzero()[0].tolist()
    value = sums[tuple(index)].item()
    row = f"row {index[-1]}" + (f" (batch {fmt_index(index[:-1])})" if len(index) > 1 else "")
    cause, hint = weight_fault_hint(weights, device)
    picture = weights_picture(weights[tuple(index[:-1])], what, causal,
                              where=fmt_index(index[:-1]) if len(index) > 1 else "") if weights.dim() >= 2 else None
    raise Failure(f"{row} of {what} sums to {value:.4g}, but attention weights sum to one along each row"
                  + (f"; {hint}" if hint else ""), cause=cause, picture=picture)


def weight_fault_hint(weights, device="cpu"):
    """(cause, hint): the common fault behind weights whose rows do not sum to one, if it shows."""
    atol, _ = tolerance(device)
    sums = weights.sum(dim=-1)
    if weights.dim() >= 2 and ((weights.sum(dim=-2) - 1).abs() < 10 * atol).all():
        return "softmax_dim", ("each column sums to one instead: your weights match a softmax taken over the "
                               "query axis; normalise each row (dim=-1)")
    if weights.dim() >= 3 and weights.shape[0] > 1 and ((weights.sum(dim=0) - 1).abs() < 10 * atol).all():
        return "softmax_dim", ("the weights sum to one across the batch instead: your weights match a softmax "
                               "taken over the batch axis (dim=0); normalise each row (dim=-1)")
    constant = sums.flatten()[0].item()
    if ((sums - constant).abs() < 10 * atol).all() and 0 < constant < 1:
        root = 1 / constant**2
        if abs(root - round(root)) < 1e-3:
            return "scale_after", (f"every row sums to {constant:.4g} = 1/sqrt({round(root)}): the division by "
                                   "sqrt(d_k) happens after the softmax; scale the scores before it")
        return None, "every row sums to the same constant: is something multiplying the weights after the softmax?"
    if weights.dim() >= 2:
        n = weights.shape[-1]
        future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1).expand_as(weights)
        if (weights[future].abs() <= atol).all() and (weights >= -atol).all() and (sums <= 1 + 10 * atol).all():
            return "not_renormalised", ("the future is zero but the rows sum to less than one: the rows were not "
                                        "renormalised after the future was zeroed; divide each row by its sum, or "
                                        "fill the future with -inf before the softmax")
    return None, "was the softmax taken over the last axis (dim=-1), and after the masking?"


def expect_future_hidden(weights, what, device="cpu"):
    """Entries above the diagonal (the future) must be zero."""
    weights = expect_tensor(weights, what)
    n = weights.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    leaks = (weights.abs() > tolerance(device)[0]) & future
    if leaks.any():
        index = leaks.nonzero()[0].tolist()
        picture = weights_picture(weights[tuple(index[:-2])], what, causal=True,
                                  where=fmt_index(index[:-2]) if len(index) > 2 else "")
        raise Failure(f"{what}: token {index[-2]} attends to the future token {index[-1]} "
                      f"(entry {fmt_index(index)} is {weights[tuple(index)].item():.4g}, should be 0); "
                      "mask everything strictly above the diagonal", picture=picture)
    diagonal = torch.diagonal(weights, dim1=-2, dim2=-1)
    if (diagonal.abs() <= tolerance(device)[0]).all():
        raise Failure(f"{what}: every token gives itself zero weight; the causal mask must hide only "
                      "positions strictly above the diagonal (torch.triu(..., diagonal=1))",
                      cause="mask_hides_diagonal")


def weights_picture(matrix, what, causal=None, where=""):
    """One (n, n) matrix of the student's attention weights as plain data for a heatmap, with
    the entries that leak the future and the rows that do not sum to one marked. Only the
    student's own numbers: the expected side of the picture is the causal pattern, not values."""
    matrix = matrix.double()[:PICTURE_SIZE, :PICTURE_SIZE]
    n = matrix.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    finite = torch.isfinite(matrix)
    if causal is None:
        causal = bool((matrix[future & finite].abs() <= 1e-6).all()) and n > 1
    sums = matrix.sum(dim=-1)
    leaks = (matrix.abs() > 1e-6) & future if causal else torch.zeros_like(future)
    return {
        "kind": "attention_weights",
        "what": what + (f", batch/head {where}" if where else ""),
        "causal": bool(causal),
        "values": [[round(v, 4) if math.isfinite(v) else None for v in row] for row in matrix.tolist()],
        "row_sums": [round(v, 4) if math.isfinite(v) else None for v in sums.tolist()],
        "column_sums": [round(v, 4) if math.isfinite(v) else None for v in matrix.sum(dim=-2).tolist()],
        "bad_rows": [i for i, v in enumerate(sums.tolist()) if not (math.isfinite(v) and abs(v - 1) <= 1e-4)],
        "leaks": [list(index) for index in leaks.nonzero().tolist()],
    }


def scalar(value, what):
    """A Python float from a number or a 0-d tensor."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.reshape(()).item())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise AssertionError(f"{what} should be a number, but your code returned {type(value).__name__}")


def close_enough(a, b, rel):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)

