"""What the kit's tests are written with: the `graded` marker and assertions that teach.

Every assertion says what differed and what to check, in the chapter's words,
and never prints a hidden expected value: only positions, counts and the
student's own numbers. A failed check carries the observations of the fault
model's probes (`grader.check.causes`): its message names a cause only when
exactly one known fault matches them all, and otherwise says which property
failed. Checks of attention weights attach the student's weights as plain
numbers for a heatmap.
"""

import contextlib
import contextvars
import math
import threading

import torch

from grader.check import public_inputs
from grader.check.causes import (CAUSES, failed_properties, heads_scrambled, measured_for, name_cause, observation,
                                 right_properties)
from grader.chapter import step_of_test_name
from grader.check.signatures import MAX_ANSWER_ELEMENTS, crash_observations, nan_outcome, pattern_outcome, rows_outcome
from grader.check.student import StudentError, StudentUnavailable
from grader.check.wire import Foreign

# (absolute, relative) tolerances per device: float32 on CPU is exact to ~1e-6 here;
# GPU kernels reorder sums, so they get more slack.
TOLERANCES = {"cpu": (1e-5, 1e-4), "cuda": (1e-4, 1e-3)}

PICTURE_SIZE = 12  # the largest attention matrix drawn in the feedback (top-left corner of bigger ones)


class Failure(AssertionError):
    """A failed check with the fault model's observations behind it, and plain data for a picture.

    `observations`: what the probes saw (see grader.check.causes.observation). `cause`: a
    property with one meaning, shorthand for observation("cause", cause). The cause the
    observations name (if exactly one known fault matches them all) is kept as
    details["cause"], with `kind` the strength of the evidence.
    """

    def __init__(self, message, cause=None, kind="property", picture=None, error=None, observations=(), found=None):
        super().__init__(message)
        self.found = found  # what was found, before `explain` added the probes' reading (said once)
        if cause and cause not in CAUSES:
            raise KeyError(f"unknown cause {cause!r}: add it to grader.check.causes.CAUSES")
        observations = list(observations) + ([observation("cause", cause)] if cause else [])
        self.details = {}
        if observations:
            self.details["observations"] = observations
        named = name_cause(observations)
        if named:
            self.details.update(cause=named, kind=kind)
        if picture:
            self.details["picture"] = picture
        if error:
            self.details["error"] = error


def explain(found, observations):
    """A failure message: what was found, then the cause when exactly one known fault matches every
    observation, else what the probes saw (which properties failed, which were right)."""
    cause = name_cause(observations)
    if cause:
        measured = measured_for(observations, cause)  # the quantity behind the cause, as measured
        return f"{found}; {measured + '; ' if measured else ''}{CAUSES[cause].title}; {CAUSES[cause].fix}"
    wrong = failed_properties(observations)
    if wrong:
        return found + "; what is wrong: " + ", ".join(f"{what} ({seen})" for what, seen in wrong)
    right = right_properties(observations)
    return found + (f" (right: {', '.join(right)})" if right else "")


def fail(found, observations, kind="property", picture=None, error=None):
    """Raise the Failure for `found` with these observations, its message from `explain`."""
    raise Failure(explain(found, observations), kind=kind, picture=picture, error=error, observations=observations,
                  found=found)


@contextlib.contextmanager
def named_crashes(probes=None):
    """Let a crash of the student's code fail the check with the fault model's reading of it: the crash's
    own meaning (a mask of the wrong size, view without contiguous...) and `probes()`' observations.
    Unfinished work ("not implemented yet", a missing name) is reported as it is."""
    try:
        yield
    except StudentError as error:
        if error.not_implemented or error.info.get("missing_name"):
            raise
        observations = crash_observations(error) + list(probes() if probes else ())
        if not observations:
            raise
        first, _, rest = str(error).partition("\n")
        failure = Failure(explain(first, observations) + (f"\n{rest}" if rest else ""), observations=observations,
                          error=details_of(error).get("error"))
        raise (probed(failure) if probes else failure) from error


@contextlib.contextmanager
def diagnosed(probes):
    """Run a check; when it fails, add the fault model's observations (`probes()`, run on the student's code)
    and say what they show: the cause when exactly one known fault matches them all, else which properties
    failed. Unfinished work ("not implemented yet", a missing name) is reported as it is."""
    probes = once(probes)
    try:
        with named_crashes(probes):
            yield
    except Failure as failure:
        if failure.details.get("probed"):
            raise
        seen = failure.details.get("observations", []) + list(probes())
        found = failure.found or str(failure).split("\n", 1)[0].split("; ", 1)[0].rstrip(". ")
        raise probed(Failure(explain(found, seen), observations=seen, picture=failure.details.get("picture"),
                             error=failure.details.get("error"))) from failure
    except (StudentError, StudentUnavailable):
        raise
    except AssertionError as error:
        seen = list(probes())
        found = (str(error) or "assertion failed").split("\n", 1)[0].split("; ", 1)[0].rstrip(". ")
        raise probed(Failure(explain(found, seen), observations=seen)) from error


def once(probes):
    """`probes`, run at most once (a check may ask for its observations twice); a probe that meets unfinished or
    crashing code elsewhere in the file observes nothing rather than hiding the check's own failure."""
    found = []

    def run():
        if not found:
            try:
                found.append(list(probes()))
            except StudentError:
                found.append([])
        return found[0]

    return run


def probed(failure):
    failure.details["probed"] = True  # the probes already ran: an outer `diagnosed` keeps this message
    return failure


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
        torch.default_generator.manual_seed(public_inputs.seed(seed))  # the judge's tensors are all on the CPU
        yield


def tolerance(device):
    return TOLERANCES["cuda" if str(device).startswith("cuda") else "cpu"]


def graded(name, weight=1, book=False):
    """Mark a test function as graded: `@graded("masking: rows sum to one", weight=2)`.

    The weight is relative: a step's points (grader.chapter) are shared out among its
    tests, public and hidden, in proportion to their weights. `book=True`: a public check of
    the chapter's printed values, which keeps the chapter's seeds at grading (see
    grader.check.public_inputs)."""
    step = step_of_test_name(name)

    def mark(function):
        function.graded = {"name": name, "step": step, "weight": weight, "book": book}
        return function

    return mark


def fmt_index(index):
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


REAL_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32,
               torch.int64, torch.uint8, torch.bool)


_HIDDEN_CHECK = contextvars.ContextVar("hidden_check", default=False)


@contextlib.contextmanager
def hidden_check():
    """The block is a hidden check (check.runner): its messages show no sizes of the student's answers."""
    token = _HIDDEN_CHECK.set(True)
    try:
        yield
    finally:
        _HIDDEN_CHECK.reset(token)


def wrong_shape(what, got, expected):
    """The message for an answer of shape `got` where `expected` was asked. A hidden check says how many axes
    and which axis differs, not the sizes: they are numbers the student's code chose, and could carry the
    hidden check's inputs into feedback (red team 4: 60 bits a check through an empty tensor's sizes)."""
    got, expected = tuple(got), tuple(expected)
    if not _HIDDEN_CHECK.get():
        return f"{what} has shape {got}, expected {expected}"
    if len(got) != len(expected):
        return f"{what} has {len(got)} axes, expected {len(expected)}"
    axis = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
    return f"{what} has the wrong size along axis {axis} (of {len(expected)})"


def shape_shown(shape):
    """A student's shape as a message may show it: in a hidden check, only its number of axes (see wrong_shape)."""
    return f"{len(tuple(shape))} axes" if _HIDDEN_CHECK.get() else str(tuple(shape))


def expect_tensor(value, what, shape=None, device=None):
    """`value` must be a plain tensor (of `shape`, on `device`); returns it as a CPU float64 tensor.

    Its shape (or, where the check gives none, its size: MAX_ANSWER_ELEMENTS), dtype and device are checked
    before any arithmetic on it. A check compares two answers only once both passed here with one shape."""
    if isinstance(value, Foreign):
        shown = value.shown_type
        advice = "convert with torch.from_numpy(...)" if shown.startswith("numpy.") else "return a torch.Tensor"
        article = "" if shown.startswith("a ") else "a "
        raise AssertionError(f"{what} should be a torch.Tensor, but your code returned {article}{shown}; {advice}")
    if isinstance(value, (list, tuple)):
        raise AssertionError(f"{what} should be a torch.Tensor, but your code returned a {type(value).__name__} "
                             f"of {len(value)} items; build one tensor (torch.stack / torch.cat) instead")
    if not isinstance(value, torch.Tensor):
        raise AssertionError(f"{what} should be a torch.Tensor, but your code returned {type(value).__name__}")
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise AssertionError(wrong_shape(what, value.shape, shape))
    if value.numel() == 0:  # it would broadcast to an empty comparison, which every check passes
        raise AssertionError(f"{what} is empty (shape {shape_shown(value.shape)}); return the computed tensor")
    if value.numel() > MAX_ANSWER_ELEMENTS:
        entries = "" if _HIDDEN_CHECK.get() else f": {value.numel()} entries"
        raise AssertionError(f"{what} has shape {shape_shown(value.shape)}{entries}, far more than the inputs call "
                             "for; check which axes your code multiplies, repeats or broadcasts")
    if value.dtype not in REAL_DTYPES:
        raise AssertionError(f"{what} has dtype {value.dtype}; return real numbers (a float tensor)")
    student_device = getattr(value, "wire_device", "cpu")
    if device is not None and torch.device(student_device).type != torch.device(device).type:
        raise AssertionError(f"{what} is on {student_device}, but the input was on {device}; "
                             "create new tensors with device=x.device (or register them as buffers)")
    if value.dtype == torch.bool:
        return value
    double = value.double()
    if not bool(torch.isfinite(double).all()):
        # Where: in a hidden check only within a shape the check set. An answer of a shape of its own choosing puts
        # its NaN anywhere among a million entries: about 20 bits of the hidden inputs per check (red team 8).
        shown = shape is not None or not _HIDDEN_CHECK.get()
        where = f" (first at {fmt_index((~torch.isfinite(double)).nonzero()[0].tolist())})" if shown else ""
        kind = "NaN" if torch.isnan(double).any() else "inf"
        rows = nan_rows(value)
        nan = nan_outcome(value) if kind == "NaN" else None  # where NaN sits, measured before any story
        if rows:
            label, outcome = rows
            fail(f"{what} contains NaN exactly in the rows of {label}{where}",
                 [observation("pattern", outcome)] + ([observation("nan", nan)] if nan else []))
        fail(f"{what} contains {kind}{where}", [observation("nan", nan)] if nan else [])
    # The copy says where the answer lived, as the answer did: a later check of it (expect_close after
    # expect_tensor) must not read "cpu" for a GPU worker's answer (tests/kit/test_device_labels.py).
    double.wire_device = student_device
    return double


def expect_computed_from(first, second, what, changed):
    """A property of a shape, a sum or a mask holds for uniform weights and for zeros of the right shape too: it
    counts only for an output computed from its input. `second`, the output once `changed` (the input) changed,
    must differ from `first` (both as expect_tensor returns them, of one shape)."""
    if bool((first.double() - second.double()).abs().max() <= 1e-6):
        fail(f"{what} stays the same when {changed}: it must be computed from them, and this check counts once it "
             "is (a right shape or sum alone earns nothing)", [])


def observed(observations):
    """A check's observations as a list: `observations` is a list, or a callable that computes them (the
    fault model's probes cost round trips to the student's process: run only when a check fails)."""
    return list(observations() if callable(observations) else observations)


def tensor_with(value, what, observations):
    """expect_tensor, with `observations` added to the failure of a tensor that holds NaN."""
    try:
        return expect_tensor(value, what)
    except Failure as failure:
        seen = failure.details.get("observations", []) + observed(observations)
        fail(str(failure).split("; ", 1)[0], seen)


def nan_rows(value):
    """(which rows, mask pattern) when NaN rows have one meaning: exactly the first token's row of every
    sequence (nothing visible to it: the diagonal is hidden) or exactly the last token's (the past is hidden
    instead of the future: nothing is left for the last token). Every row NaN has two (a mask that hides
    everything, or 0 x -inf in the scores): signatures.nan_outcome says so, and no pattern is read."""
    if value.dim() < 2 or value.dtype == torch.bool:
        return None
    n = value.shape[-2]
    rows = torch.isnan(value.double()).reshape(-1, n, value.shape[-1]).any(dim=-1)
    first, last = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
    first[0], last[-1] = True, True
    if n > 2 and bool((rows == first).all()):
        return "the first token", "diagonal"
    if n > 2 and bool((rows == last).all()):
        return "the last token", "past"
    return None


def mismatch(actual, expected, atol, rtol):
    """Boolean tensor of entries that differ beyond tolerance."""
    return ~torch.isclose(actual.double(), expected.double(), atol=atol, rtol=rtol)


def expect_close(actual, expected, what, device="cpu", suspects=None, picture=None, probes=None):
    """`actual` must match `expected` within the device's tolerance.

    `suspects` maps a cause (a key of grader.check.causes.CAUSES) to what the judge's
    reference gives with that fault, on the same inputs (a dict, or (cause, tensor) pairs, which may be
    computed lazily: they are walked only when the output is wrong); the student's output equal to
    one of them is a signature observation. `probes`: a callable returning more observations (the
    fault model's probes on the student's code), run only when the output is wrong. The failure names
    a cause when exactly one known fault matches every observation. `picture` ("causal" or "full")
    attaches the student's weights for a heatmap when `actual` are attention weights.
    """
    atol, rtol = tolerance(device)
    try:
        actual = expect_tensor(actual, what, device=device)
    except Failure as failure:  # NaN rows: add what the known faults and the probes say
        seen = failure.details.get("observations", [])
        if isinstance(actual, torch.Tensor):
            seen = seen + [signature_of(actual.double(), suspects, atol, rtol)]
        fail(str(failure).split("; ", 1)[0], seen + list(probes() if probes else ()), kind="signature")
    if tuple(actual.shape) != tuple(expected.shape):
        found = wrong_shape(what, actual.shape, expected.shape)
        fail(found, [signature_of(actual, suspects, atol, rtol)] + list(probes() if probes else ()), kind="signature")
    wrong = mismatch(actual, expected, atol, rtol)
    if not wrong.any():
        return
    first = wrong.nonzero()[0].tolist()
    found = (f"{what} differ from the reference at {int(wrong.sum())} of {wrong.numel()} entries "
             f"(first at {fmt_index(first)}; tolerance atol={atol:g}, rtol={rtol:g})")
    image = None
    if picture and actual.dim() >= 2 and actual.shape[-1] == actual.shape[-2]:
        image = weights_picture(actual[tuple(first[:-2])], what, causal=picture == "causal",
                                where=fmt_index(first[:-2]) if len(first) > 2 else "")
    observations = [signature_of(actual, suspects, atol, rtol)] + list(probes() if probes else ())
    fail(found, observations, kind="signature", picture=image)


def signature_of(actual, suspects, atol, rtol):
    """The signature observation: which of the known faults' outputs (`suspects`) the student's equals."""
    matched, modelled = set(), set()
    for cause, suspect in (suspects.items() if hasattr(suspects, "items") else suspects or ()):
        if cause not in CAUSES:
            raise KeyError(f"unknown cause {cause!r}: add it to grader.check.causes.CAUSES")
        modelled.add(cause)
        if tuple(suspect.shape) == tuple(actual.shape) and torch.isclose(
                actual.double(), suspect.double(), atol=10 * atol, rtol=10 * rtol, equal_nan=True).all():
            matched.add(cause)
    return observation("signature", matched=matched, modelled=modelled)


def expect_rows_sum_to_one(weights, what, device="cpu", causal=None, observations=(), probe="rows"):
    """Every row (last axis) of attention weights sums to one; say what is wrong if not.
    `observations`: a list, or a callable run only on failure (see `observed`).
    `causal`: whether the weights should hide the future (None: judge by the weights); `probe`: "renorm"
    for weights renormalised by hand (no softmax: a wrong axis there is not the softmax's)."""
    weights = tensor_with(weights, what, observations)
    atol, _ = tolerance(device)
    sums = weights.sum(dim=-1)
    wrong = (sums - 1).abs() > 10 * atol
    if not wrong.any():
        return
    index = wrong.nonzero()[0].tolist()
    value = sums[tuple(index)].item()
    row = f"row {index[-1]}" + (f" (batch {fmt_index(index[:-1])})" if len(index) > 1 else "")
    picture = weights_picture(weights[tuple(index[:-1])], what, causal,
                              where=fmt_index(index[:-1]) if len(index) > 1 else "") if weights.dim() >= 2 else None
    seen = [observation(probe, rows_outcome(weights, causal=bool(causal), probe=probe))] + observed(observations)
    misread(what, seen)
    fail(f"{row} of {what} sums to {value:.4g}, but attention weights sum to one along each row", seen,
         picture=picture)


def expect_future_hidden(weights, what, device="cpu", observations=()):
    """Entries above the diagonal (the future) must be zero, and only those; `observations` as in
    expect_rows_sum_to_one."""
    weights = tensor_with(weights, what, observations)
    n = weights.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    pattern = pattern_outcome(weights)
    leaks = (weights.abs() > tolerance(device)[0]) & future
    if leaks.any() or pattern not in (None, "ok"):
        seen = ([observation("pattern", pattern)] if pattern else []) + observed(observations)
        misread(what, seen)
    if leaks.any():
        index = leaks.nonzero()[0].tolist()
        picture = weights_picture(weights[tuple(index[:-2])], what, causal=True,
                                  where=fmt_index(index[:-2]) if len(index) > 2 else "")
        fail(f"{what}: token {index[-2]} attends to the future token {index[-1]} "
             f"(entry {fmt_index(index)} is {weights[tuple(index)].item():.4g}, should be 0)", seen, picture=picture)
    if pattern not in (None, "ok"):
        fail(f"{what}: the hidden positions are not exactly those above the diagonal", seen)


def misread(what, seen):
    """Fail without reading weights that are not there: where the probes saw the heads split or merged out of
    place, weights read through one-hot values are the scramble's, and an entry or a row of them ("token 0
    attends to the future token 2") would be false evidence beside the right cause."""
    if heads_scrambled(seen):
        fail(f"{what}: each head's weighted values are not where they belong in the output, so its attention "
             "weights cannot be read from it", seen)


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
