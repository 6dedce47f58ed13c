"""The probes of the fault model: what a behaviour of the student's code says about the known mistakes.

Each probe looks at the student's own outputs on inputs it chooses and returns
an observation (`causes.observation`): a probe name and an outcome from the
vocabulary of `causes.PROBES`. They need no reference solution and know no
hidden value, so the public checks (the student's `python check.py`) and the
hidden ones run the same probes, each on its own inputs, and name a cause by
the same rule (`causes.name_cause`).

Weights are read through outputs with the value trick: token i is the unit
vector e_i and W_value maps e_j to e_j inside each head, so the context vector
of token i is row i of that head's attention weights.
"""

import functools
import itertools
import math
import re
import weakref

import torch

from grader.check import public_inputs
from grader.check.causes import MASK_RESHAPED, MASK_SLICED, crash_cause, observation
from grader.check.student import StudentError, StudentUnavailable

ROW_TOL = 1e-4  # float32 row sums of a handful of entries are exact to ~1e-6
HIDDEN = 1e-12  # a weight this small is a hidden position (an exp(-inf) or a zeroed entry)


def raised(value):
    """`value`, or raise it when it is the StudentError a batched request met (see ModuleHandle.forward_each)."""
    if isinstance(value, StudentError):
        raise value
    return value


# The most entries an answer may have where a check does not know its shape: 32 times the largest answer any
# check expects (8 x 64 x 64). Checked before any arithmetic (here and in grader.check.testing.expect_tensor): a
# forged answer (4e6, 1, 1) fits the wire's size limit, but joined or compared with what the judge expects it
# would cost the judge hundreds of megabytes and seconds, outside every limit of the worker.
MAX_ANSWER_ELEMENTS = 1 << 20


def as_double(value):
    """A student's tensor as float64, or None when it is no tensor or too large to be an answer."""
    if not isinstance(value, torch.Tensor) or value.numel() > MAX_ANSWER_ELEMENTS:
        return None
    return value.detach().double()


# ------------------------------------------------------------------ attention weights
def rows_outcome(weights, causal=False, probe="rows"):
    """How the rows of attention weights (..., n, n) fail to sum to one, in the words of PROBES[probe]."""
    weights = as_double(weights)
    if weights is None or weights.dim() < 2:
        return "other"
    finite = torch.isfinite(weights)
    if bool(((weights < -ROW_TOL) & finite).any()) or bool(((weights > 1 + ROW_TOL) & finite).any()):
        return "raw" if probe == "rows" else "other"
    if not bool(finite.all()):
        # NaN first: where the rows left finite each sum to one, the softmax was taken along the rows and the NaN
        # has another story (a +inf fill, 0 x -inf: see nan_outcome); the finite part of such weights can sum
        # to one along some set of axes by chance (one finite row sums to one over the flattened matrix).
        if probe == "rows" and not whole_rows_sum_to_one(weights) and summed_to_one(weights.nan_to_num(0.0), finite):
            return "axis"
        return "nan" if probe == "rows" else "other"
    sums = weights.sum(dim=-1)
    if bool(((sums - 1).abs() <= ROW_TOL).all()):
        return "ok"
    if summed_to_one(weights):
        if probe == "renorm":  # renormalising has one wrong axis with a name: the columns (dim=-2) alone
            columns = weights.sum(dim=-2)
            return "axis" if bool(((columns - 1).abs() <= ROW_TOL * 10).all()) else "other"
        return "axis"
    constant = sums.flatten()[0].item()
    if 0 < constant < 1 - ROW_TOL and bool(((sums - constant).abs() <= ROW_TOL).all()):
        return "constant" if probe == "rows" else "other"
    n = weights.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    # The future zeroed and the rows left short of one: not renormalised. The last row has no future, so it still
    # sums to one; rows all a little short (a `+ 1e-3` in the denominator) are no missing renormalisation.
    if n > 1 and bool((weights[..., future].abs() <= HIDDEN).all()) and bool((sums <= 1 + 10 * ROW_TOL).all()) \
            and bool(((sums[..., -1] - 1).abs() <= ROW_TOL).all()):
        return "short"
    return "other"


def summed_to_one(weights, where=None):
    """Whether some set of axes other than the last alone sums to one everywhere (a softmax over the wrong
    axis or axes: the query axis, the batch, the heads, or several flattened together)."""
    axes = range(weights.dim())
    last = weights.dim() - 1
    for size in range(1, weights.dim() + 1):
        for chosen in itertools.combinations(axes, size):
            if chosen == (last,):
                continue
            sums = weights.sum(dim=chosen)
            if where is not None:  # the sums of the finite part only count where something was summed
                counted = where.sum(dim=chosen) > 0
                sums = sums[counted]
            if sums.numel() and bool(((sums - 1).abs() <= ROW_TOL * 10).all()):
                return True
    return False


def temperature_outcome(weights, scores, scales, causal=False):
    """The temperature tau of softmax(scores / tau) that gave `weights`, as one of `scales`' labels
    ({label: tau}, "ok" the right one), "other" when it is none of them, "unfit" when the weights are not a
    softmax of these scores at all, None when the weights cannot tell (too few visible positions). With
    `causal`, only the positions a causal mask leaves visible (j <= i) count: the scale is read apart
    from what the mask does to the future."""
    weights, scores = as_double(weights), as_double(scores)
    if weights is None or scores is None or weights.shape[-2:] != scores.shape[-2:]:
        return None
    scores = scores.expand_as(weights) if scores.dim() <= weights.dim() else scores
    visible = torch.isfinite(weights) & (weights > HIDDEN)
    if causal:
        n = weights.shape[-1]
        visible &= torch.tril(torch.ones(n, n, dtype=torch.bool))
    logs = torch.where(visible, weights.clamp_min(1e-300).log(), torch.zeros_like(weights))
    count = visible.sum(dim=-1, keepdim=True)
    usable = (count >= 2).expand_as(weights) & visible
    if int(usable.sum()) < 4:
        return None
    safe = count.clamp_min(1)
    centred_logs = torch.where(usable, logs - (logs * visible).sum(-1, keepdim=True) / safe, torch.zeros_like(logs))
    centred_scores = torch.where(usable, scores - (scores * visible).sum(-1, keepdim=True) / safe,
                                 torch.zeros_like(scores))
    spread = (centred_scores**2).sum().item()
    if spread < 1e-8:
        return None
    slope = (centred_logs * centred_scores).sum().item() / spread
    misfit = (centred_logs - slope * centred_scores).abs().max().item()
    if not math.isfinite(slope) or slope <= 0 or misfit > 1e-3 * max(1.0, centred_logs.abs().max().item()):
        return "unfit"
    tau = 1 / slope
    found = [label for label, value in scales.items() if math.isclose(tau, value, rel_tol=2e-3)]
    label = found[0] if len(found) == 1 else "other"
    return Measured(label, tau)


class Measured(str):
    """An outcome label that also carries the quantity measured (`value`): compares and hashes as the label."""

    def __new__(cls, label, value):
        made = super().__new__(cls, label)
        made.value = value
        return made


def temperature_observation(weights, scores, scales, causal=False):
    """[the temperature observation] (or []): the outcome, and when it is wrong the scale the student's code
    actually used, measured from its weights, beside the right one ("your scores are divided by 4.5;
    sqrt(d_k) is 3")."""
    outcome = temperature_outcome(weights, scores, scales, causal)
    if not outcome:
        return []
    tau = getattr(outcome, "value", None)
    if outcome == "ok" or tau is None:
        return [observation("temperature", str(outcome))]
    used = ("your scores are not scaled (divided by 1)" if math.isclose(tau, 1.0, rel_tol=2e-3) else
            f"your scores are divided by {tau:.4g}" if tau >= 1 else f"your scores are multiplied by {1 / tau:.4g}")
    # d_k said with its root: a probe may use other sizes than the check whose message it joins
    d_k = scales["ok"] ** 2
    return [observation("temperature", str(outcome),
                        measured=f"{used}; sqrt(d_k) is {scales['ok']:.4g} for the probe's d_k = {d_k:.4g}")]


def scale_table(d_k, d_in=None, d_out=None, heads=None, tokens=None):
    """{label: tau} for the temperature probe; labels whose values collide are dropped (they could not tell).
    The later readings (d_k / 2 and 2 * d_k from `d_k**1/2`, the number of keys) join only where they collide
    with nothing: they never cost an earlier label its name."""
    table = {"ok": math.sqrt(d_k), "one": 1.0, "d_k": float(d_k), "inverse": 1 / math.sqrt(d_k)}
    for label, size in (("d_in", d_in), ("d_out", d_out), ("heads", heads), ("tokens", tokens)):
        if size:
            table[label] = math.sqrt(size)
    values = list(table.values())
    table = {label: value for label, value in table.items()
             if label == "ok" or sum(math.isclose(value, other, rel_tol=2e-3) for other in values) == 1}
    later = {"half": d_k / 2, "twice": 2.0 * d_k}  # (d_k**1/2) is d_k / 2; scores / d_k**1/2 is scores / d_k / 2
    if tokens:
        later["keys"] = float(tokens)  # the number of keys itself, not its square root
    everything = values + list(later.values())
    for label, value in later.items():
        if sum(math.isclose(value, other, rel_tol=2e-3) for other in everything) == 1:
            table[label] = value
    return table


MASK_SHAPES = (("ok", 1, "triu"), ("diagonal", 0, "triu"), ("next", 2, "triu"), ("past", 0, "tril"),
               ("past", -1, "tril"))


def hidden_outcome(hidden):
    """Which known mask a boolean (n, n) pattern of hidden positions is."""
    n = hidden.shape[-1]
    ones = torch.ones(n, n, dtype=torch.bool)
    for label, diagonal, kind in MASK_SHAPES:
        if torch.equal(hidden, (torch.triu if kind == "triu" else torch.tril)(ones, diagonal=diagonal)):
            return label
    if not bool(hidden.any()):
        return "none"
    if bool(hidden.all()):
        return "all"
    return "other"


def nan_outcome(weights):
    """Where NaN sits in attention weights (..., n, n), measured before any story is told (PROBES["nan"]):
    None without NaN. A softmax row is NaN when every score in it is -inf, or when one of them is +inf or NaN;
    which rows and entries are NaN tells those apart as far as outputs can."""
    weights = as_double(weights)
    if weights is None or weights.dim() < 2 or not bool(torch.isnan(weights).any()):
        return None
    n = weights.shape[-1]
    if weights.shape[-2] != n or n < 3:
        return None  # not weights (a module's output: NaN weights on the future and NaN rows look alike there)
    nan = torch.isnan(weights).reshape(-1, n, n)
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    if bool((nan == future).all()):
        return "future"
    rows = nan.all(dim=-1)
    if not bool((nan.any(dim=-1) == rows).all()) or not bool((rows == rows[:1]).all()):
        return "other"  # NaN in parts of rows, or not the same rows in every matrix
    rows = rows[0]
    if bool(rows.all()):
        return "all"
    expected = {"first": torch.arange(n) == 0, "last": torch.arange(n) == n - 1,
                "hidden_rows": torch.arange(n) < n - 1}
    found = [label for label, which in expected.items() if torch.equal(rows, which)]
    if found == ["hidden_rows"] and not whole_rows_sum_to_one(weights):
        # Weights read through a module's outputs turn a NaN entry into a NaN row: NaN on the future of every
        # row (a softmax along another axis) then looks the same, but leaves the last row short of one.
        return None
    return found[0] if found else "other"


def whole_rows_sum_to_one(weights):
    """Whether the rows without NaN exist and each sums to one (a softmax along the rows, NaN elsewhere)."""
    whole = ~torch.isnan(weights).any(dim=-1)
    if not bool(whole.any()):
        return False
    sums = weights.nan_to_num(0.0).sum(dim=-1)[whole]
    return bool(((sums - 1).abs() <= ROW_TOL).all())


def pattern_outcome(weights):
    """Which positions causal attention weights (..., n, n) hide: zero (or NaN, a row with nothing visible)
    in every matrix of the batch. NaN rows count as hidden only where they have that one meaning (the first
    row: the diagonal hidden too; the last row: the past hidden); other NaN says nothing about the pattern
    (every row NaN is a mask that hides everything or 0 x -inf in the scores, see nan_outcome)."""
    weights = as_double(weights)
    if weights is None or weights.dim() < 2 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 3:
        return None
    if nan_outcome(weights) not in (None, "first", "last"):
        return None
    nan_rows = torch.isnan(weights).all(dim=-1, keepdim=True).expand_as(weights)
    hidden = (weights.abs() <= HIDDEN) | nan_rows
    hidden = hidden.reshape(-1, *hidden.shape[-2:])
    if not bool((hidden == hidden[0]).all()):
        return "other"
    return hidden_outcome(hidden[0])


def future_scores_observation(weights, moved, scores, d_k):
    """[the future_scores observation] for causal weights of `scores` and of the same scores with the future
    changed (`moved`): "leak" when the weights move. When they do not while the future keeps weight (nothing
    hidden), the value the hidden scores were replaced by is measured (w_ij / w_ii = exp((f - s_ii) / sqrt(d_k)))
    and said: 0 is a fill with 0 instead of -inf."""
    weights, moved, scores = as_double(weights), as_double(moved), as_double(scores)
    if weights is None or moved is None or weights.shape != moved.shape or weights.shape[-2:] != scores.shape[-2:]:
        return []
    if not torch.allclose(weights, moved, atol=1e-6, equal_nan=True):
        return [observation("future_scores", "leak")]
    n = weights.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1).expand_as(weights)
    diagonal = torch.diagonal(weights, dim1=-2, dim2=-1).unsqueeze(-1).expand_as(weights)
    own = torch.diagonal(scores.expand_as(weights), dim1=-2, dim2=-1).unsqueeze(-1).expand_as(weights)
    usable = future & (weights > HIDDEN) & (diagonal > HIDDEN) & torch.isfinite(weights)
    if not bool(usable.any()):
        return [observation("future_scores", "ok")]
    fill = own[usable] + math.sqrt(d_k) * (weights[usable] / diagonal[usable]).log()
    if float(fill.max() - fill.min()) > 1e-3 * max(1.0, float(fill.abs().max())):
        return [observation("future_scores", "ok")]
    value = float(fill.median())
    value = 0.0 if abs(value) < 1e-4 else value
    return [observation("future_scores", "ok", measured=f"the hidden scores count as {value:.3g} in the softmax, "
                                                        "whatever they were")]


def renorm_outcome(got, weights):
    """The renorm probe on mask_and_renormalize(weights) = `got`: its row sums (rows_outcome), or "softmax" where
    `got` is a softmax of the masked weights (the zeroed future gets exp(0) again, whatever the row sums say)."""
    outcome = rows_outcome(got, causal=True, probe="renorm")
    got, weights = as_double(got), as_double(weights)
    if got is None or weights is None or got.shape != weights.shape or weights.dim() < 2 or weights.shape[-1] < 3:
        return outcome
    n = weights.shape[-1]
    again = torch.softmax(weights * torch.tril(torch.ones(n, n, dtype=torch.float64)), dim=-1)
    return "softmax" if torch.allclose(got, again, rtol=1e-4, atol=1e-6) else outcome


def mask_dtype_observations(mask):
    """[the mask_float cause] when causal_mask returned a floating-point tensor of zeros and ones, else []."""
    mask = mask if isinstance(mask, torch.Tensor) else None
    if mask is None or not mask.is_floating_point() or mask.numel() == 0:
        return []
    return [observation("cause", "mask_float")] if bool(((mask == 0) | (mask == 1)).all()) else []


def mask_values_outcome(mask):
    """What a module's registered mask holds, read only when every row of its weights is NaN: set everywhere
    ("all": the mask hides everything), or the chapter's triu(ones, diagonal=1) ("ok": the NaN comes from
    elsewhere, such as 0 x -inf). A keep-mask or any other layout says nothing (None)."""
    mask = as_double(mask)
    if mask is None or mask.dim() != 2 or mask.shape[0] != mask.shape[1] or mask.shape[0] < 3:
        return None
    hidden = hidden_outcome(mask != 0)
    return {"all": "all", "ok": "ok"}.get(hidden)


def mask_outcome(mask):
    """Which known mask causal_mask(n) returned (True = hidden)."""
    mask = as_double(mask)
    if mask is None or mask.dim() != 2 or mask.shape[0] != mask.shape[1] or mask.shape[0] < 3:
        return None
    return hidden_outcome(mask != 0)


# ------------------------------------------------------------------ the variance argument
UNIFORM_PRODUCT_VARIANCE = 1 / 9 - 1 / 16  # Var(q_i k_i) for q_i, k_i uniform in [0, 1)


def variance_observation(before, dim):
    """[the variance probe's observation] for dot_product_variance's variance_before at `dim` (none when it is
    about dim): which known quantity it measures instead, said with its value. Bounds -25 %/+30 %, as the
    checks' (a correct estimate lies well inside them)."""
    def near(value, target):
        return 0.75 * target < value < 1.3 * target

    if near(before, dim):
        return []
    known = {"std": (math.sqrt(dim), "sqrt(dim)"), "unsummed": (1.0, "1"), "same_draw": (2.0 * dim, "2 * dim"),
             "uniform": (dim * UNIFORM_PRODUCT_VARIANCE, "dim * (1/9 - 1/16)")}
    found = [label for label, (value, _) in known.items() if near(before, value) and not near(value, dim)]
    if dim < 4:  # sqrt(dim), 1 and dim are too close to tell apart
        found = [label for label in found if label in ("same_draw", "uniform")]
    label = found[0] if len(found) == 1 else "other"
    said = f"your variance_before is {before:.4g} for dim={dim}, where the variance of q·k is about {dim}"
    if label != "other":
        value, formula = known[label]
        said += f"; yours is about {formula}" + (f" = {value:.4g}" if formula != f"{value:g}" else "")
    return [observation("variance", label, measured=said)]


# ------------------------------------------------------------------ dropout
def rate_outcome(rate, p, tolerance):
    if rate <= 1e-9 < p:
        return "none"
    if abs(rate - p) < tolerance:
        return "ok"
    if abs(rate - (1 - p)) < tolerance:
        return "keep"
    return "other"


def rescale_outcome(factor, p):
    """How the survivors were scaled (`factor`: typical survivor / original) for dropout rate p."""
    if factor is None:
        return None
    known = {"ok": 1 / (1 - p), "one": 1.0, "inverse_p": 1 / p, "p": p, "keep": 1 - p, "twice": 1 / (1 - p) ** 2}
    found = [label for label, value in known.items() if math.isclose(factor, value, rel_tol=1e-3)]
    return found[0] if len(found) == 1 else "other"


def layout_outcome(dropped, p=0.5, active=None, heads_axis=None):
    """Whether the zeros of dropout outputs (b, [heads,] n, n) repeat across the batch or the heads, or come
    in whole rows or columns; `dropped` is the boolean zero pattern, `active` the weights that could be
    dropped (all by default)."""
    active = torch.ones_like(dropped) if active is None else active
    if not bool(dropped.any()):
        return "ok"
    if dropped.shape[0] > 1 and bool((dropped == dropped[:1]).all()):
        return "batch"
    if heads_axis is not None and dropped.shape[heads_axis] > 1:
        if bool((dropped == dropped.narrow(heads_axis, 0, 1)).all()):
            return "heads"
    # Whole rows (columns) dropped together: a mask of the wrong shape drops a full line with probability p,
    # independent draws only with probability p**length.
    for axis in (-1, -2):
        full = active.all(dim=axis)
        if int(full.sum()) >= 20 and (dropped.all(dim=axis) & full).sum().item() / full.sum().item() > p / 2:
            return "lines"
    return "ok"


# ------------------------------------------------------------------ crashes
def crash_observations(error):
    """The observation a StudentError carries: its cause, when the crash has one meaning."""
    info = getattr(error, "info", None) or {}
    cause = crash_cause({key: info.get(key) for key in ("type", "message", "location")})
    return [observation("crash", cause)] if cause else []


# ------------------------------------------------------------------ structure (module.describe())
ROLES = ("W_query", "W_key", "W_value")


def bias_outcome(info, qkv_bias, prefix=""):
    """Whether the projections' biases follow qkv_bias."""
    modules = info["modules"]
    flags = [modules.get(prefix + role, {}).get("bias") for role in ROLES if prefix + role in modules]
    if not flags:
        return None
    if qkv_bias:
        return "ok" if all(flags) else "absent"
    return "present" if any(flags) else "ok"


def linear_outcome(info, d_in, d_out, prefix=""):
    """Whether the projections map d_in -> d_out (or the other way round)."""
    sizes = [(modules["in_features"], modules["out_features"]) for role in ROLES
             if (modules := info["modules"].get(prefix + role)) and "in_features" in modules]
    if not sizes:
        return None
    if all(size == (d_in, d_out) for size in sizes):
        return "ok"
    return "swapped" if any(size == (d_out, d_in) for size in sizes) else None


def dropout_module_outcome(info, p, path="dropout"):
    entry = info["modules"].get(path)
    if not entry or entry.get("class") != "Dropout":
        return "missing"
    return "ok" if abs(entry.get("p", -1) - p) < 1e-9 else "rate"


def mask_buffer_outcome(info, path="mask"):
    """How a module keeps its `mask`: a buffer ("ok"), an nn.Parameter, which trains ("parameter"), or a plain
    tensor attribute, which .to(device) leaves behind ("attribute": `mask`, or, without a `mask` buffer, any
    plain tensor of the module with an axis, under whatever name). A module that keeps none builds its mask in
    forward, as it may: its outputs judge it (and, on a GPU, its device), not this probe (None)."""
    if path in info["buffers"]:
        return "ok"
    if path in info["parameters"]:
        return "parameter"
    return "attribute" if plain_tensors_left_behind(info, path) else None


def plain_tensors_left_behind(info, path="mask"):
    """The plain tensor attributes of the module at `path`'s level that could be its mask (`path` itself, or any
    with an axis: a number kept as a 0-d tensor works on every device)."""
    owner = path.rpartition(".")[0]
    return sorted(name for name, entry in info["plain_tensors"].items()
                  if name.rpartition(".")[0] == owner and (name == path or entry["shape"]))


def out_proj_outcome(info, d_out, head_dim):
    entry = info["modules"].get("out_proj")
    if not entry or "in_features" not in entry:
        return "missing"
    sizes = (entry["in_features"], entry["out_features"])
    if sizes == (d_out, d_out):
        return "ok" if entry.get("bias") else "bias"
    return "per_head" if sizes == (head_dim, head_dim) else "shape"


def heads_outcome(info, state, heads, d_out):
    """How the wrapper keeps its heads: a plain list, one repeated module, identical starts, a chain, the wrong
    size, or layers of its own beside them."""
    modules = info["modules"]
    entry = modules.get("heads")
    if entry is None:
        return "list" if not any("length" in value for path, value in modules.items() if path) else None
    if entry.get("class") == "Sequential":
        return "sequential"
    distinct = sum(f"heads.{h}" in modules for h in range(heads))
    if entry.get("length") == heads and distinct < heads:
        return "shared"
    if distinct == heads:
        sizes = {modules.get(f"heads.{h}.W_query", {}).get("out_features") for h in range(heads)}
        if sizes == {d_out // heads} and d_out // heads != d_out:
            return "size"
        first = state.get("heads.0.W_query.weight")
        if isinstance(first, torch.Tensor) and all(
                isinstance(state.get(f"heads.{h}.W_query.weight"), torch.Tensor)
                and torch.equal(first, state[f"heads.{h}.W_query.weight"]) for h in range(1, heads)):
            return "same_init"
    own = [path for path, value in modules.items()
           if path and not path.startswith("heads") and value.get("class") not in ("Dropout",)]
    if own:
        return "extra"
    return "ok" if entry.get("length") == heads else None


# ------------------------------------------------------------------ seeded draws
def replay_draws(stream, shape, draw_kinds):
    """The tensors drawn from the generator `stream` (as after torch.manual_seed) by draws of `shape` with the given
    kinds, in order."""
    return [(torch.rand if kind == "rand" else torch.randn)(*shape, generator=stream) for kind in draw_kinds]


def init_outcome(got, d_in, d_out, seed, roles=ROLES):
    """Whether `got` ({role: tensor}) are the chapter's torch.rand(d_in, d_out) draws in the order query, key,
    value after the seed: "order" (right draws, wrong roles), "randn" (some are torch.randn draws), "shape"
    ((d_out, d_in) matrices), "other"."""
    values = [as_double(got.get(role)) for role in roles]
    if any(value is None for value in values):
        return None
    if d_in != d_out and all(tuple(value.shape) == (d_out, d_in) for value in values):
        return "shape"
    if any(tuple(value.shape) != (d_in, d_out) for value in values):
        return "other"
    for kinds in itertools.product(("rand", "randn"), repeat=len(roles)):
        drawn = replay_draws(public_inputs.generator(seed), (d_in, d_out), kinds)  # the check's seed, as moved
        for order in itertools.permutations(range(len(roles))):
            if all(torch.allclose(values[role].float(), drawn[position], atol=1e-6)
                   for role, position in enumerate(order)):
                if set(kinds) != {"rand"}:
                    return "randn"
                return "ok" if order == tuple(range(len(roles))) else "order"
    return other_draws(values, d_in, d_out, seed)


RESEED_SEARCH = 1001  # seeds 0..1000 are tried for draws made after a torch.manual_seed inside the function


def other_draws(values, d_in, d_out, seed):
    """Draws that are not three torch.rand(d_in, d_out) after the caller's seed, measured: one fused draw split
    in three ("fused"), or draws after a seed of the function's own ("reseeded", with that seed); else "other"."""
    def same(a, b):
        return tuple(a.shape) == tuple(b.shape) and torch.allclose(a.float(), b.float(), atol=1e-6)

    fused = torch.rand(d_in, len(values) * d_out, generator=public_inputs.generator(seed)).chunk(len(values), dim=-1)
    if all(same(value, part) for value, part in zip(values, fused)):
        return Measured("fused", "the three are the column blocks of one torch.rand(d_in, 3 * d_out) draw")
    callers = public_inputs.seed(seed)
    for own in range(RESEED_SEARCH):  # the submission's own seeds: never moved
        if own == callers:
            continue
        first = torch.rand(d_in, d_out, generator=torch.Generator().manual_seed(own))
        if not same(values[0], first):
            continue
        if all(same(value, first) for value in values):
            return Measured("reseeded", f"all three are the first torch.rand draw after torch.manual_seed({own}): "
                                        "the generator is seeded again before each draw")
        drawn = replay_draws(torch.Generator().manual_seed(own), (d_in, d_out), ["rand"] * len(values))
        if all(same(value, draw) for value, draw in zip(values, drawn)):
            return Measured("reseeded", f"they are the torch.rand draws after torch.manual_seed({own}), a seed of "
                                        "your function's own, whatever the caller's seed")
    return "other"


def holds_rand_draws(values, d_in, d_out, seed):
    """Whether the tensors `values` hold torch.rand's numbers after the caller's seed (as moved), in any arrangement:
    the first draws of the generator in float32 (one call or several, any order, a transpose, one fused draw all
    give the same numbers) or in float64; or draws after a seed of the function's own (`other_draws`)."""
    if any(not isinstance(value, torch.Tensor) or value.numel() == 0 for value in values):
        return False
    got = torch.cat([value.detach().double().flatten() for value in values]).sort().values
    for dtype in (torch.float32, torch.float64):
        drawn = torch.rand(got.numel(), generator=public_inputs.generator(seed), dtype=dtype).double().sort().values
        if torch.allclose(got, drawn, atol=1e-6, rtol=0):
            return True
    return all(tuple(value.shape) == (d_in, d_out) for value in values) and \
        other_draws([as_double(value) for value in values], d_in, d_out, seed) == "reseeded"


def init_observation(got, d_in, d_out, seed):
    """[the init probe's observation] (or []), with what the draws measure as, when they are not the chapter's."""
    outcome = init_outcome(got, d_in, d_out, seed)
    if not outcome:
        return []
    measured = getattr(outcome, "value", None)
    return [observation("init", str(outcome), measured=measured if outcome != "ok" else None)]


def linear_draws(seed, d_in, d_out, count, bias=False):
    """The weights of `count` nn.Linear(d_in, d_out) created one after another right after torch.manual_seed(seed):
    each is uniform in +-1/sqrt(d_in) (PyTorch's default init), drawn here from a generator of our own."""
    stream = public_inputs.generator(seed)
    bound = 1 / math.sqrt(d_in)
    made = []
    for _ in range(count):
        made.append(torch.empty(d_out, d_in).uniform_(-bound, bound, generator=stream))
        if bias:
            torch.empty(d_out).uniform_(-bound, bound, generator=stream)
    return made


def linear_init_outcome(state, d_in, d_out, seed, qkv_bias, roles=ROLES, prefix=""):
    """Whether a module's seeded nn.Linear projections were created in the order W_query, W_key, W_value right
    after the seed: "order" when the same layers landed in other roles."""
    got = [state.get(f"{prefix}{role}.weight") for role in roles]
    if any(not isinstance(value, torch.Tensor) or tuple(value.shape) != (d_out, d_in) for value in got):
        return None
    made = linear_draws(seed, d_in, d_out, len(roles), qkv_bias)
    for order in itertools.permutations(range(len(roles))):
        if all(torch.allclose(got[role].float(), made[position], atol=1e-6) for role, position in enumerate(order)):
            return "ok" if order == tuple(range(len(roles))) else "order"
    return "other"


# ------------------------------------------------------------------ modules, read through their outputs
def draw(*shape, seed, scale=0.5):
    """A fresh copy of a fixed draw: every submission of a class is probed with the same inputs, drawn once."""
    return _draw(shape, public_inputs.seed(seed), scale).clone()


@functools.lru_cache(maxsize=4096)
def _draw(shape, seed, scale):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale


def one_hot_tokens(batch, n, d_in):
    """Inputs whose token i is the unit vector e_i (d_in >= n), the same in every sequence."""
    x = torch.zeros(batch, n, d_in)
    x[:, torch.arange(n), torch.arange(n)] = 1.0
    return x


def value_trick_params(info, d_in, d_out, n, heads=1, seed=0, raw=False):
    """Parameters under which a module's output for one-hot tokens is its attention weights: random query and
    key weights, W_value mapping e_j to e_j in each head, zero biases wherever the module has one, and an
    identity out_proj. `raw`: SelfAttention_v1's (d_in, d_out) matrices. Returns (params, queries, keys),
    the queries and keys of the n one-hot tokens, (n, d_out)."""
    head_dim = d_out // heads
    values = torch.zeros(d_out, d_in)
    for head in range(heads):
        values[head * head_dim + torch.arange(n), torch.arange(n)] = 1.0
    weights = {"W_query": draw(d_out, d_in, seed=seed), "W_key": draw(d_out, d_in, seed=seed + 1), "W_value": values}
    modules = info["modules"] if info else {}
    params = {}
    for role, weight in weights.items():
        if raw:
            params[role] = weight.T.contiguous()
            continue
        params[f"{role}.weight"] = weight
        if modules.get(role, {}).get("bias"):
            params[f"{role}.bias"] = torch.zeros(d_out)
    out_proj = modules.get("out_proj")
    if out_proj and (out_proj.get("in_features"), out_proj.get("out_features")) == (d_out, d_out):
        params["out_proj.weight"] = torch.eye(d_out)
        if out_proj.get("bias"):
            params["out_proj.bias"] = torch.zeros(d_out)
    return params, weights["W_query"][:, :n].T.double(), weights["W_key"][:, :n].T.double()


def head_scores(queries, keys, heads):
    """(heads, n, n) scores of each head from (n, d_out) queries and keys."""
    n, d_out = queries.shape
    q = queries.reshape(n, heads, d_out // heads).transpose(0, 1)
    k = keys.reshape(n, heads, d_out // heads).transpose(0, 1)
    return q @ k.transpose(-2, -1)


def heads_layouts(values, heads):
    """{layout: output} of multi-head attention whose every score is equal (causal: token i averages the values
    of tokens 0..i in each head), for values (b, n, d_out): "ok" the heads split and merged right, "merge"
    merged by a view without transpose(1, 2), "split" split by a view straight to (b, heads, n, head_dim) and
    merged right, "split_view" split so and merged back by a view too."""
    b, n, d_out = values.shape
    head_dim = d_out // heads
    average = torch.tril(torch.ones(n, n, dtype=values.dtype))
    average = average / average.sum(dim=-1, keepdim=True)
    per_head = average @ values.reshape(b, n, heads, head_dim).transpose(1, 2)
    split = average @ values.reshape(b, heads, n, head_dim)
    return {"ok": average @ values, "merge": per_head.reshape(b, n, d_out),
            "split": split.transpose(1, 2).reshape(b, n, d_out), "split_view": split.reshape(b, n, d_out)}


def head_cuts(d_out, heads):
    """{cut: [the features of each head]}: the chapter's ("ok", contiguous blocks of head_dim), "strided" (head h
    takes features h, h + num_heads, ...) and "swapped" (head_dim heads, each a block of num_heads features)."""
    head_dim = d_out // heads
    return {"ok": [list(range(h * head_dim, (h + 1) * head_dim)) for h in range(heads)],
            "strided": [list(range(h, d_out, heads)) for h in range(heads)],
            "swapped": [list(range(g * heads, (g + 1) * heads)) for g in range(head_dim)]}


def attention_in_groups(q, k, v, groups):
    """Causal multi-head attention whose heads are the feature `groups` of q, k, v (b, n, d_out), each scaled by
    its own size, merged back into the same features."""
    out = torch.zeros_like(v)
    n = q.shape[1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    for group in groups:
        scores = (q[..., group] @ k[..., group].transpose(-2, -1)).masked_fill(future, float("-inf"))
        out[..., group] = torch.softmax(scores / len(group) ** 0.5, dim=-1) @ v[..., group]
    return out


def holds_the_same_numbers(out, want):
    """Whether each sequence of `out` holds exactly the numbers of `want`'s, in other places: the heads' contexts
    are right but split or merged in another order. (A wrong mask or scale changes the numbers themselves.)"""
    return not torch.allclose(out, want, atol=1e-5) and torch.allclose(
        out.flatten(1).sort(dim=1).values, want.flatten(1).sort(dim=1).values, atol=1e-5)


def weights_of_output(out, n, heads, d_out):
    """Per-head (b, heads, n, n) weights cut from a value-trick output (b, n, d_out); None if misshapen, or if
    the features past the n read in each head are not zero (the values do not come from W_value as injected:
    what the output holds is then not the weights)."""
    out = as_double(out)
    if out is None or out.dim() != 3 or tuple(out.shape[1:]) != (n, d_out):
        return None
    head_dim = d_out // heads
    blocks = out.reshape(out.shape[0], n, heads, head_dim)
    if head_dim > n and bool((blocks[..., n:].nan_to_num(0.0).abs() > 1e-6).any()):
        return None
    return torch.stack([out[:, :, h * head_dim: h * head_dim + n] for h in range(heads)], dim=1)


SHARED_P = 0.3  # the dropout rate of the module the probes share


class Dims:
    """A module's sizes for a battery of probes: all different, so that every wrong scale is told apart."""

    def __init__(self, d_in, d_out, n, heads=1, context=None, batch=3):
        self.d_in, self.d_out, self.n, self.heads, self.batch = d_in, d_out, n, heads, batch
        self.context = context or n + 2
        self.head_dim = d_out // heads

    def scales(self):
        return scale_table(self.head_dim, d_in=self.d_in, d_out=self.d_out if self.heads > 1 else None,
                           heads=self.heads if self.heads > 1 else None, tokens=self.n)


def weight_observations(weights, scores, dims, causal):
    """Rows, temperature and (causal) mask pattern of weights read from a module or a function."""
    found = [observation("rows", rows_outcome(weights, causal=causal))]
    nan = nan_outcome(weights)
    if nan:
        found.append(observation("nan", nan))
    found += temperature_observation(weights, scores, dims.scales() if isinstance(dims, Dims) else dims, causal)
    if causal:
        pattern = pattern_outcome(weights)
        if pattern:
            found.append(observation("pattern", pattern))
    return found


def dropped_scores(first, trained, scores, d_k, p, tolerance=1e-3):
    """Whether training-mode causal weights (b, heads, n, n), which differ from eval mode's (`first`), are exactly a
    softmax of the scores (heads, n, n) of which some were zeroed and the rest divided by (1-p): dropout on the
    scores before the mask and the softmax. Row by row, log w_ij + L_i must be s_ij / ((1-p) sqrt(d_k)) or 0
    for one constant L_i; both cases must occur. Random scores leave no other reading."""
    first, trained, scores = as_double(first), as_double(trained), as_double(scores)
    if first is None or trained is None or scores is None or trained.dim() != 4 or first.shape != trained.shape:
        return False
    if not bool(torch.isfinite(trained).all()) or torch.allclose(first, trained, atol=1e-6):
        return False
    n = trained.shape[-1]
    if n < 3 or scores.shape[-2:] != (n, n) or scores.shape[0] != trained.shape[1]:
        return False
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    if bool((trained[..., future].abs() > 1e-7).any()) or bool((trained[..., ~future] <= 0).any()):
        return False
    kept = (scores / ((1 - p) * math.sqrt(d_k))).expand_as(trained)
    logs = trained.log()
    seen = {"kept": False, "dropped": False}
    for row in range(1, n):  # the first row has one visible weight: 1 whatever was dropped
        c, a = logs[..., row, : row + 1].reshape(-1, row + 1), kept[..., row, : row + 1].reshape(-1, row + 1)
        for line_c, line_a in zip(c, a):
            fits = [shift for shift in torch.cat([line_a - line_c, -line_c])
                    if bool((((line_c + shift - line_a).abs() < tolerance) | ((line_c + shift).abs() < tolerance))
                            .all())]
            if not fits:
                return False
            as_kept = (line_c + fits[0] - line_a).abs() < tolerance
            as_dropped = ((line_c + fits[0]).abs() < tolerance) & (line_a.abs() > 10 * tolerance)
            seen["kept"] |= bool(as_kept.any())
            seen["dropped"] |= bool((as_dropped & ~as_kept).any())
    return seen["kept"] and seen["dropped"]


def dropout_scaled_rows(found, weights, p):
    """`found` with its row-sum observation read again for eval-mode weights of a module built with dropout rate
    `p`: rows that all sum to 1/(1-p), where the mask and the softmax's scale are right, are weights divided by
    (1-p) outside dropout ("dropout")."""
    weights = as_double(weights)
    if weights is None or weights.dim() < 2 or not 0 < p < 1 or not bool(torch.isfinite(weights).all()):
        return found
    if any(item.get("probe") in ("pattern", "temperature") and item.get("outcome") != "ok" for item in found):
        return found
    sums = weights.sum(dim=-1)
    if not bool(((sums * (1 - p) - 1).abs() <= ROW_TOL).all()):
        return found
    return [observation("rows", "dropout") if item.get("probe") == "rows" else item for item in found]


class Battery:
    """Runs probes on a student's module and collects their observations; a probe whose call crashes adds
    the crash's observation (when it has one meaning) and stops only itself."""

    def __init__(self, student, name, dims, dropout=0.0, stand_in_heads=False, seed=0):
        self.student, self.name, self.dims, self.seed = student, name, dims, seed
        self.dropout, self.stand_in_heads = dropout, stand_in_heads
        self.observations = []
        self.crashes = []
        self._shared = None

    def shared(self):
        """One module (qkv_bias=False, dropout SHARED_P, eval mode unless asked) for the probes that can share it:
        each build is a round trip to the student's process, and grading has a time budget per step."""
        if self._shared is None:
            module = self.built_as_shared()
            self._shared = (module, module.describe())
        return self._shared

    def built_as_shared(self):
        """A new module built as the shared one is (a probe compares the two, e.g. before and after forwards)."""
        return self.build(qkv_bias=False, dropout=SHARED_P)

    def args(self, dropout):
        dims = self.dims
        if self.name in ("SelfAttention_v1",):
            return (dims.d_in, dims.d_out), {}
        if self.name == "SelfAttention_v2":
            return (dims.d_in, dims.d_out), {}
        if self.name == "CausalAttention":
            return (dims.d_in, dims.d_out, dims.context, dropout), {}
        return (dims.d_in, dims.d_out, dims.context, dropout, dims.heads), {}

    def build(self, qkv_bias=False, dropout=None, seed=None):
        args, kwargs = self.args(self.dropout if dropout is None else dropout)
        if self.name != "SelfAttention_v1":
            kwargs["qkv_bias"] = qkv_bias
        return self.student.build(self.name, *args, seed=self.seed if seed is None else seed,
                                  stand_in_heads=self.stand_in_heads, **kwargs)

    def run(self, probe, *args):
        try:
            probe(*args)
        except StudentError as error:
            found = crash_observations(error) + self.heads_crossed(error)
            self.observations += found
            self.crashes.append(error)
        except StudentUnavailable:
            raise  # the worker is gone (a time limit, a crash, an exit): the check fails with that, not a cause
        except (AssertionError, RuntimeError, ValueError, TypeError, IndexError, KeyError):
            pass  # an odd output: this probe cannot tell, the others still can
        return self

    def heads_crossed(self, error):
        """A clash between num_heads and num_tokens where the mask meets the scores: the scores are
        (..., heads, heads), so the attention ran across the heads of each token, not across the tokens."""
        info = getattr(error, "info", None) or {}
        sizes = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)",
                          info.get("message") or "")
        code = (info.get("location") or "").split(": ", 1)[-1]
        if self.dims.heads > 1 and sizes and MASK_SLICED.search(code) and not MASK_RESHAPED.search(code):
            if {int(sizes.group(1)), int(sizes.group(2))} in ({self.dims.heads, self.dims.n},
                                                              {self.dims.heads, self.dims.context}):
                return [observation("crash", "split_no_transpose")]
        return []

    def add(self, probe, outcome):
        if outcome:
            self.observations.append(observation(probe, outcome))

    # -- structure ----------------------------------------------------------
    def structure(self):
        def look():
            _, info = self.shared()
            self.add("bias_off", bias_outcome(info, False))
            self.add("linear", linear_outcome(info, self.dims.d_in, self.dims.d_out))
            if self.name in ("CausalAttention", "MultiHeadAttention"):
                self.add("dropout_module", dropout_module_outcome(info, SHARED_P))
                self.add("mask_buffer", mask_buffer_outcome(info))
            if self.name == "MultiHeadAttention":
                outcome = out_proj_outcome(info, self.dims.d_out, self.dims.head_dim)
                if outcome == "ok" and not self.out_proj_used():
                    outcome = "missing"
                self.add("out_proj", outcome)

        def look_biased():
            self.add("bias_on", bias_outcome(self.build(qkv_bias=True).describe(), True))

        self.run(look)
        if self.name != "SelfAttention_v1":
            self.run(look_biased)
        return self

    def out_proj_used(self):
        """Whether the output follows out_proj's weights (the value trick's output, then out_proj doubled)."""
        module, _ = self.shared()
        _, _, _ = self.weights(module=module, batch=2)
        x = one_hot_tokens(2, self.dims.n, self.dims.d_in)
        base = as_double(module.forward(x))
        doubled = as_double(module.forward(x, weights={"out_proj.weight": 2 * torch.eye(self.dims.d_out)}))
        module.load({"out_proj.weight": torch.eye(self.dims.d_out)})
        return base is None or doubled is None or not torch.allclose(doubled, base, equal_nan=True)

    def construction(self, seed=123):
        """The order in which the projections are created (seeded nn.Linear draws)."""
        def look():
            state = self.build(seed=seed).state()
            if self.name == "SelfAttention_v1":
                self.observations += init_observation(state, self.dims.d_in, self.dims.d_out, seed)
            else:
                self.add("init", linear_init_outcome(state, self.dims.d_in, self.dims.d_out, seed, qkv_bias=False))

        return self.run(look)

    # -- attention weights ----------------------------------------------------
    def weights(self, causal=True, train=False, seed=None, module=None, batch=None, info=None):
        """(weights (b, heads, n, n), scores (heads, n, n), module) read through the value trick; `info`: the
        module's description, when the caller has it already."""
        dims = self.dims
        if module is None:
            module, info = self.shared()
        elif info is None:
            info = module.describe()
        raw = self.name == "SelfAttention_v1"
        params, queries, keys = value_trick_params(info, dims.d_in, dims.d_out, dims.n, dims.heads, seed=self.seed,
                                                   raw=raw)
        if self.name in ("SelfAttention_v1", "SelfAttention_v2"):
            x = one_hot_tokens(1, dims.n, dims.d_in)[0]
            out = module.forward(x, train=train, seed=seed, weights=params)
            out = out.unsqueeze(0) if isinstance(out, torch.Tensor) and out.dim() == 2 else out
        else:
            out = module.forward(one_hot_tokens(batch or dims.batch, dims.n, dims.d_in), train=train, seed=seed,
                                 weights=params)
        return weights_of_output(out, dims.n, dims.heads, dims.d_out), head_scores(queries, keys, dims.heads), module

    def weights_each(self, module, info, modes, batch=None):
        """(weights, or the StudentError that reading them met, for each (train, seed) of `modes`; scores):
        the value trick's readings of one module, in one round trip. The caller raises an error where it
        would have met it reading one by one."""
        dims = self.dims
        params, queries, keys = value_trick_params(info, dims.d_in, dims.d_out, dims.n, dims.heads, seed=self.seed)
        x = one_hot_tokens(batch or dims.batch, dims.n, dims.d_in)
        outs = module.forward_each([((x,), train, seed) for train, seed in modes], weights=params)
        found = [out if isinstance(out, StudentError) else weights_of_output(out, dims.n, dims.heads, dims.d_out)
                 for out in outs]
        return found, head_scores(queries, keys, dims.heads)

    def attention(self, causal=True):
        def look():
            weights, scores, module = self.weights(causal=causal)
            if weights is not None:
                self.observations += dropout_scaled_rows(weight_observations(weights, scores, self.dims, causal),
                                                         weights, SHARED_P)
            elif self.name in ("CausalAttention", "MultiHeadAttention"):
                self.batch_order(module, causal)
                if causal and nan_outcome(weights) == "all":
                    self.add("mask_values", mask_values_outcome(module.state().get("mask")))

        def future_keys():
            """Scale the last token's key: causal weights of the tokens before it must not move (its score is
            hidden from them); they move when the future is visible with its real scores."""
            weights, _, module = self.weights(causal=causal)
            if weights is None or not causal:
                return
            _, info = self.shared()
            params, _, _ = value_trick_params(info, self.dims.d_in, self.dims.d_out, self.dims.n, self.dims.heads,
                                              seed=self.seed, raw=self.name == "SelfAttention_v1")
            params["W_key.weight"][:, self.dims.n - 1] *= 5.0
            x = one_hot_tokens(self.dims.batch, self.dims.n, self.dims.d_in)
            moved = weights_of_output(module.forward(x, weights=params), self.dims.n, self.dims.heads,
                                      self.dims.d_out)
            if moved is None:
                return
            before, after = weights[..., : self.dims.n - 1, :], moved[..., : self.dims.n - 1, :]
            self.add("future_scores", "ok" if torch.allclose(before, after, atol=1e-6, equal_nan=True) else "leak")

        self.layout_seen = None
        self.run(self.heads_layout)
        if self.layout_seen not in (None, "ok"):
            return self  # the value trick reads scrambled heads: its rows, scale and pattern would be misread
        self.run(look)
        self.run(future_keys)
        return self.run(self.value_path)

    def batch_order(self, module, causal):
        """A module whose output for (b, n, d_in) has shape (n, b, d_out) (b != n) and whose attention weights,
        read through a batch of as many sequences as tokens (where the two orders coincide), are right in every
        respect the probes read: x.shape was unpacked as (num_tokens, b, d_in). Those right readings are kept
        too: they rule out the mask and scale faults that the scrambled outputs seem to show."""
        dims = self.dims
        if dims.batch == dims.n:
            return
        out = as_double(module.forward(one_hot_tokens(dims.batch, dims.n, dims.d_in)))
        if out is None or tuple(out.shape) != (dims.n, dims.batch, dims.d_out):
            return
        weights, scores, _ = self.weights(causal=causal, module=module, batch=dims.n)
        if weights is None:
            return
        found = weight_observations(weights, scores, dims, causal)
        read = {item["probe"] for item in found}
        if {"rows", "temperature"} <= read and all(item.get("outcome") == "ok" for item in found):
            self.observations += found + [observation("batch_order", "swapped")]

    def heads_layout(self):
        """Multi-head attention with zero queries and keys (equal scores: each token averages the values of
        tokens 0..i in every head) and random values: the output is that average, in place, when the heads are
        split and merged right. It is measured against the known scrambles (merged, or split, by a view
        without transpose(1, 2)); an output that holds the right numbers in other places is another scramble
        ("other"); an output that is none of these (a wrong mask also changes it) says nothing here."""
        dims = self.dims
        if self.name != "MultiHeadAttention" or dims.heads < 2:
            return
        module, info = self.shared()
        params, _, _ = value_trick_params(info, dims.d_in, dims.d_out, dims.n, dims.heads, seed=self.seed)
        params["W_query.weight"] = torch.zeros(dims.d_out, dims.d_in)
        params["W_key.weight"] = torch.zeros(dims.d_out, dims.d_in)
        params["W_value.weight"] = draw(dims.d_out, dims.d_in, seed=self.seed + 60, scale=1.0)
        x = draw(dims.batch, dims.n, dims.d_in, seed=self.seed + 61, scale=1.0)
        out = as_double(module.forward(x, weights=params))
        if out is None or tuple(out.shape) != (dims.batch, dims.n, dims.d_out) or not bool(torch.isfinite(out).all()):
            return
        layouts = heads_layouts(x.double() @ params["W_value.weight"].double().T, dims.heads)
        matched = {"split" if label == "split_view" else label for label, want in layouts.items()
                   if torch.allclose(out, want, atol=1e-5)}
        if not matched and holds_the_same_numbers(out, layouts["ok"]):
            matched = {"other"}
        if len(matched) == 1:
            self.layout_seen = matched.pop()
            if self.layout_seen == "ok":  # equal attention cannot tell which features make a head: heads apart can
                self.layout_seen = self.heads_apart(module, info) or "ok"
            self.add("heads_layout", self.layout_seen)

    def heads_apart(self, module, info):
        """Heads that attend differently, on one-hot tokens with saturated scores: head 0 to the first token,
        every other head each token to itself. Equal attention everywhere (heads_layout) gives the same output
        however the features are cut into heads, as long as the merge undoes the split; here the output says which
        cut it was: "strided" (view(b, n, head_dim, num_heads) then permute: head h takes every num_heads-th
        feature) or "swapped" (view(b, n, head_dim, num_heads) then transpose(1, 2): head_dim heads of num_heads
        features). None where it is the chapter's cut, or none of these (a wrong mask changes it too)."""
        dims = self.dims
        n, heads, head_dim, d_in, d_out = dims.n, dims.heads, dims.head_dim, dims.d_in, dims.d_out
        if n > head_dim or n > d_in or head_dim == heads:
            return None
        params, _, _ = value_trick_params(info, d_in, d_out, n, heads, seed=self.seed)
        query, key = torch.zeros(d_out, d_in), torch.zeros(d_out, d_in)
        saturated = 12.0  # scores of 144: every other weight below e^-60 at any of the scales below
        query[0, :n] = saturated
        key[0, 0] = saturated
        for head in range(1, heads):
            for token in range(n):
                query[head * head_dim + token, token] = key[head * head_dim + token, token] = saturated
        value = draw(d_out, d_in, seed=self.seed + 62, scale=1.0)
        params.update({"W_query.weight": query, "W_key.weight": key, "W_value.weight": value})
        x = one_hot_tokens(dims.batch, n, d_in)
        out = as_double(module.forward(x, weights=params))
        if out is None or tuple(out.shape) != (dims.batch, n, d_out) or not bool(torch.isfinite(out).all()):
            return None
        q, k, v = (x.double() @ weight.double().T for weight in (query, key, value))
        for label, groups in head_cuts(d_out, heads).items():
            if torch.allclose(out, attention_in_groups(q, k, v, groups), atol=1e-5):
                return None if label == "ok" else label
        return None

    def value_path(self):
        """With W_value = 0 every output is 0 (out_proj, if any, is the identity without bias): otherwise the
        values come from another projection, or from the inputs themselves. Reading weights through the values
        (the value trick) needs this."""
        if getattr(self, "value_path_seen", None) is None:
            self.value_path_seen = "unknown"
            module, info = self.shared()
            dims = self.dims
            params, _, _ = value_trick_params(info, dims.d_in, dims.d_out, dims.n, dims.heads, seed=self.seed,
                                              raw=self.name == "SelfAttention_v1")
            if "out_proj" in info["modules"] and "out_proj.weight" not in params:
                return self.value_path_seen  # an out_proj of another shape keeps its own weights: no reading
            params["W_value" if self.name == "SelfAttention_v1" else "W_value.weight"] = torch.zeros_like(
                params["W_value" if self.name == "SelfAttention_v1" else "W_value.weight"])
            x = draw(dims.batch, dims.n, dims.d_in, seed=self.seed + 50, scale=1.0)
            out = as_double(module.forward(x[0] if self.name in ("SelfAttention_v1", "SelfAttention_v2") else x,
                                           weights=params))
            if out is None or out.shape[-1] != dims.d_out or not bool(torch.isfinite(out).all()):
                return self.value_path_seen
            self.value_path_seen = "ok" if bool((out.abs() <= 1e-6).all()) else "other"
            self.add("value_path", self.value_path_seen)
        return self.value_path_seen

    # -- token and batch structure -------------------------------------------
    def loaded(self, now=True):
        """(the shared module, the value trick's parameters), loaded into it unless `now` is False: then the
        caller's first forward takes them (other probes may have changed them)."""
        module, info = self.shared()
        params, _, _ = value_trick_params(info, self.dims.d_in, self.dims.d_out, self.dims.n, self.dims.heads,
                                          seed=self.seed, raw=self.name == "SelfAttention_v1")
        if now:
            module.load(params)
        return module, params

    def steady(self):
        """Whether the shared module, in eval mode, gives the same output twice for one input. When it does not
        (dropout left active when not training), every probe that compares two calls (rows, mask, causality,
        batch independence) would read its randomness as their fault: only that is said (a blind reviewer saw
        five false properties listed for one `F.dropout` without training=)."""
        if self.name not in ("CausalAttention", "MultiHeadAttention"):
            return True
        calm = [True]

        def look():
            module, params = self.loaded(now=False)
            x = draw(self.dims.batch, self.dims.n, self.dims.d_in, seed=self.seed + 90, scale=1.0)
            first, again = map(as_double, module.forward_many([(x,), (x,)], weights=params))
            if first is not None and again is not None and first.shape == again.shape and \
                    not torch.allclose(first, again, atol=1e-7, equal_nan=True):
                self.add("eval", "random")
                calm[0] = False

        self.run(look)
        return calm[0]

    def output_kind(self):
        """A forward whose output is (b, n, n) where (b, n, d_out) is due, n != d_out: the attention weights (or
        scores) came back instead of the context vectors. Said as a cause: every other check then only sees the
        wrong shape (a blind reviewer's student was told shapes on nine checks and no cause)."""
        dims = self.dims
        if self.name not in ("CausalAttention", "MultiHeadAttention") or dims.n == dims.d_out:
            return self

        def look():
            module, params = self.loaded(now=False)
            x = draw(dims.batch, dims.n, dims.d_in, seed=self.seed + 95, scale=1.0)
            out = module.forward_many([(x,)], weights=params)[0]
            if isinstance(out, torch.Tensor) and tuple(out.shape) in ((dims.batch, dims.n, dims.n),
                                                                      (dims.batch, dims.heads, dims.n, dims.n)):
                self.add("cause", "returns_weights")

        return self.run(look)

    def causality(self):
        """Perturb every token after t (t = 0, then t = n - 2): the outputs of tokens 0..t must not move."""
        if getattr(self, "layout_seen", None) not in (None, "ok"):
            return self  # scrambled heads mix tokens: the leak is theirs, not a mask's
        def look():
            module, params = self.loaded(now=False)
            x = draw(self.dims.batch, self.dims.n, self.dims.d_in, seed=self.seed + 7, scale=1.0)
            starts = sorted({0, self.dims.n - 2})
            inputs = [(x,)]
            for t in starts:
                perturbed = x.clone()
                perturbed[:, t + 1:] += draw(self.dims.batch, self.dims.n - t - 1, self.dims.d_in,
                                             seed=self.seed + 8 + t, scale=1.0)
                inputs.append((perturbed,))
            base, *outs = map(as_double, module.forward_many(inputs, weights=params))
            leak = False
            for t, out in zip(starts, outs):
                if base is None or out is None or out.shape != base.shape or base.dim() < 2:
                    return
                leak |= not torch.allclose(out[:, : t + 1], base[:, : t + 1], atol=1e-5, equal_nan=True)
            self.add("causality", "leak" if leak else "ok")

        return self.run(look)

    def batch_independence(self):
        def look():
            module, params = self.loaded(now=False)
            x = draw(self.dims.batch, self.dims.n, self.dims.d_in, seed=self.seed + 20, scale=1.0)
            changed = x.clone()
            changed[1] = draw(self.dims.n, self.dims.d_in, seed=self.seed + 21, scale=1.0)
            base, out = map(as_double, module.forward_many([(x,), (changed,)], weights=params))
            if base is None or out is None or out.shape != base.shape or base.shape[0] != x.shape[0]:
                return
            others = [i for i in range(x.shape[0]) if i != 1]
            self.add("batch", "ok" if torch.allclose(out[others], base[others], atol=1e-5, equal_nan=True)
                     else "mixed")

        return self.run(look)

    def lengths(self):
        """One token, a few, and the full context_length: a crash only below context_length is a mask not sliced
        to the tokens; a crash only at context_length is a mask built for fewer positions, unless a fresh module
        takes the full length: then forward changed the module (its mask) on an earlier, shorter input."""
        def call(n):
            return (draw(2, n, self.dims.d_in, seed=self.seed + 31 + n, scale=1.0),), False, None

        def look():
            module, params = self.loaded(now=False)
            lengths = (self.dims.context, 1, self.dims.n)
            outs = module.forward_each([call(n) for n in lengths], weights=params)  # each length's crash its own
            crashes = {n: out for n, out in zip(lengths, outs) if isinstance(out, StudentError)}
            if not crashes:
                self.add("lengths", "ok")
            elif set(crashes) == {self.dims.context}:
                fresh = self.built_as_shared()
                out = fresh.forward_each([call(self.dims.context)], weights=params)[0]
                self.add("lengths", "long_crash" if isinstance(out, StudentError) else "state")
            elif self.dims.context not in crashes:
                self.add("lengths", "short_crash")
                self.observations += crash_observations(next(iter(crashes.values())))
            else:
                raise crashes[self.dims.context]  # every length fails: not about lengths

        return self.run(look)

    def square_batch(self):
        """When the module raised: a batch of as many sequences as tokens. If that runs and gives attention
        weights that sum to one while other batch sizes raise, the mask is sized from the batch axis (the one
        repair the inputs can make: the student's code itself is not changed)."""
        if not self.crashes or self.name in ("SelfAttention_v1", "SelfAttention_v2"):
            return self

        def look():
            module, info = self.shared()
            dims = self.dims
            params, _, _ = value_trick_params(info, dims.d_in, dims.d_out, dims.n, dims.heads, seed=self.seed)
            out = module.forward(one_hot_tokens(dims.n, dims.n, dims.d_in), weights=params)
            weights = weights_of_output(out, dims.n, dims.heads, dims.d_out)
            # Right rows and exactly the causal pattern in every sequence: a mask of another wrong shape that
            # happens to broadcast at this batch size (unsqueezed on another axis) hides other positions.
            if weights is not None and rows_outcome(weights, causal=True) == "ok" and pattern_outcome(weights) == "ok":
                self.add("batch_size", "tokens")

        return self.run(look)

    # -- dropout -----------------------------------------------------------------
    def dropout_behaviour(self, p=SHARED_P, batch=64, seed=5):
        dims = self.dims

        def look():
            module, info = self.shared() if p == SHARED_P else (self.build(qkv_bias=False, dropout=p), None)
            info = info or module.describe()
            (first, again, trained), scores = self.weights_each(module, info, [(False, None), (False, None),
                                                                               (True, seed)], batch=batch)
            first, again = raised(first), raised(again)
            if first is None or again is None:
                return
            steady = torch.equal(first.nan_to_num(7.0), again.nan_to_num(7.0))
            self.add("eval", "ok" if steady else "random")
            trained = raised(trained)
            if trained is None or not steady:
                return  # dropped in eval too: rate and rescaling measured against dropped weights mean nothing
            if bool(torch.isnan(trained).any()) and not bool(torch.isnan(first).any()):
                self.add("target", "nan")
                return
            if self.target_seen == "outside":
                return  # what the value trick reads in training is then not the dropped weights
            active = torch.isfinite(first) & torch.isfinite(trained) & (first.abs() > 1e-7)
            if int(active.sum()) < 100:
                return  # too few weights to count what dropout drops
            zero = (trained.abs() < 1e-7) & active
            counted = active.sum().item()
            rate = zero.sum().item() / counted
            # the share dropped of `counted` weights varies by sqrt(p(1-p)/counted): 5 of those, at least 0.08 (a
            # bug leaving few weights usable measured "other" on 1 input draw in 64 at a fixed 0.08)
            self.add("rate", rate_outcome(rate, p, max(0.08, 5 * math.sqrt(p * (1 - p) / counted))))
            if rate == 0 and dropped_scores(first, trained, scores, dims.head_dim, p):
                self.add("target", "scores")
            survivors = active & ~zero
            if rate > 0 and bool(survivors.any()):
                ratio = (trained[survivors] / first[survivors])
                self.add("rescale", rescale_outcome(ratio.median().item(), p)
                         if bool(((ratio - ratio.median()).abs() < 1e-3 * ratio.median().abs()).all()) else None)
                self.add("layout", layout_outcome(zero, p, active, heads_axis=1 if dims.heads > 1 else None))

        def target():
            """Values that every feature of a head shares (W_value reads only the last input feature, which
            differs by token): dropout on the weights keeps a head's features equal, dropout elsewhere does not."""
            module, info = self.shared()
            params, _, _ = value_trick_params(info, dims.d_in, dims.d_out, dims.n, dims.heads, seed=self.seed)
            values = torch.zeros(dims.d_out, dims.d_in)
            # Head h's features all read (h + 1) x the last input feature: a head's block of the output is then
            # uniform, and tells heads apart, so that heads merged on the wrong axes show without any dropout.
            values[:, -1] = torch.arange(1, dims.heads + 1, dtype=values.dtype).repeat_interleave(
                dims.d_out // dims.heads)
            params["W_value.weight"] = values
            x = draw(4, dims.n, dims.d_in, seed=self.seed + 40, scale=1.0)
            x[..., -1] = torch.arange(1, dims.n + 1, dtype=x.dtype)  # values differ by token: a head's weights show

            def uniform_heads(train, weights=None):
                """Whether each head's block of features is all equal (None: no usable output)."""
                out = as_double(module.forward(x, train=train, seed=seed + 1, weights=weights))
                if out is None or out.dim() != 3 or out.shape[-1] != dims.d_out or bool(torch.isnan(out).any()):
                    return None
                blocks = out.reshape(out.shape[0], out.shape[1], dims.heads, -1)
                return bool((blocks - blocks[..., :1]).abs().max() < 1e-5)

            # Without dropout the blocks must already be uniform: if not, heads are split or merged on the wrong
            # axes, and what training shows says nothing about where dropout acts.
            if not uniform_heads(train=False, weights=params):
                return
            trained = uniform_heads(train=True)
            if trained is None:
                return
            self.target_seen = "ok" if trained else "outside"
            self.add("target", self.target_seen)

        self.target_seen = None
        self.run(self.value_path)
        if getattr(self, "value_path_seen", None) == "ok":
            self.run(target)
        self.run(look)
        return self


# {student: {battery key: observations}}: the probes run once per student and step, whichever checks ask.
_SEEN = weakref.WeakKeyDictionary()

# The battery in parts, each run (and remembered) on its own: a check that needs only the attention's properties,
# or only dropout, does not pay the round trips of the others.
PARTS = {
    "structure": lambda battery, causal: battery.structure(),
    "attention": lambda battery, causal: None if not battery.steady() else battery.output_kind()
    .attention(causal=causal).causality().batch_independence().lengths().square_batch() if causal
    else battery.attention(causal=False),
    "construction": lambda battery, causal: battery.construction(),
    "dropout": lambda battery, causal: battery.dropout_behaviour(),
}


def battery_observations(student, name, dims, parts, causal=True, stand_in_heads=False):
    """The observations of the battery's `parts` (keys of PARTS) on a module class, on the sizes `dims`; each
    part computed once per student (one step of one submission) for the same arguments."""
    seen = _SEEN.setdefault(student, {})
    found = []
    for part in parts:
        key = (name, vars(dims).__repr__(), causal, stand_in_heads, part)
        if key not in seen:
            battery = Battery(student, name, dims, stand_in_heads=stand_in_heads)
            PARTS[part](battery, causal)
            seen[key] = battery.observations
        found += [item for item in seen[key] if item not in found]  # (value_path: seen by two parts)
    return found


def module_observations(student, name, dims, causal=True, dropout=False, stand_in_heads=False):
    """Every probe of the fault model on a module class, on the sizes `dims`: structure, the attention weights
    (rows, scale, mask pattern), causality, batch independence, lengths, creation order and, if asked,
    dropout."""
    parts = ("structure", "attention", "construction") + (("dropout",) if dropout else ())
    return battery_observations(student, name, dims, parts, causal=causal, stand_in_heads=stand_in_heads)


def one_token_projected(result, x, weights):
    """Whether each of project's outputs is x[..., i, :] @ W of its own role for one token i (the same for all
    three): the chapter's single-token example (x_2 @ W_query) in place of every token."""
    x = as_double(x)
    if x is None or x.dim() < 2 or x.shape[-2] < 2 or len(result) != 3:
        return False
    for token in range(x.shape[-2]):
        wants = [x[..., token, :] @ W.double() for W in weights]
        gots = [as_double(got) for got in result]
        if all(got is not None and got.shape == want.shape and (got - want).abs().max().item() < 1e-4
               for got, want in zip(gots, wants)):
            return True
    return False


def projection_observation(result, x, weights):
    """Which weight each of project's three outputs used: queries and keys swapped, another role's weight,
    or W.T (square weights only) are the known mistakes."""
    modelled = ("qk_swapped", "projection_mixup", "weight_transposed", "project_one_token")
    if one_token_projected(result, x, weights):
        return observation("signature", matched=("project_one_token",), modelled=modelled)
    found = []
    for got in result:
        source = None
        for index, W in enumerate(weights):
            for transposed in (False, True):
                if transposed and W.shape[0] != W.shape[1]:
                    continue
                want = x.double() @ (W.double().T if transposed else W.double())
                got_value = as_double(got)
                if got_value is not None and got_value.shape == want.shape and \
                        (got_value - want).abs().max().item() < 1e-4:
                    source = (index, transposed)
                    break
            if source:
                break
        found.append(source)
    if None in found or len(found) != 3:
        return observation("signature", matched=(), modelled=modelled)
    if [index for index, _ in found] == [1, 0, 2]:
        return observation("signature", matched=("qk_swapped",), modelled=modelled)
    if any(index != role for role, (index, _) in enumerate(found)):
        return observation("signature", matched=("projection_mixup",), modelled=modelled)
    return observation("signature", matched=("weight_transposed",) if any(t for _, t in found) else (),
                       modelled=modelled)


def scores_observations(student, n=4, seed=70):
    """attention_scores on square queries and keys (n tokens of n features), where a missing transpose of the
    keys does not raise: the output equals queries @ keys (the keys were never transposed) or keys @ queries^T
    (the score matrix transposed). The student's code runs on inputs of the probe's choosing; nothing else is
    changed in it."""
    queries, keys = draw(n, n, seed=seed, scale=1.0), draw(n, n, seed=seed + 1, scale=1.0)
    try:
        got = as_double(student.call("attention_scores", queries, keys))
    except StudentError:
        return []
    suspects = {"keys_not_transposed": queries.double() @ keys.double(),
                "scores_kq": keys.double() @ queries.double().T}
    if got is None or tuple(got.shape) != (n, n):
        return []
    matched = [cause for cause, want in suspects.items() if torch.allclose(got, want, atol=1e-5)]
    return [observation("signature", matched=matched, modelled=suspects)]


def wrapper_observations(student, d_in, d_out, context, heads, seed=9):
    """The wrapper's probes: how it keeps its heads, and which known way of joining the heads' outputs (reversed,
    along the tokens or the batch, stacked, the first head only) its output equals."""
    try:
        module = student.build("MultiHeadAttentionWrapper", d_in, d_out, context, 0.0, heads, seed=seed,
                               stand_in_heads=True)
        info = module.describe()
        found = []
        outcome = heads_outcome(info, module.state(), heads, d_out)
        if outcome:
            found.append(observation("heads", outcome))
        if outcome not in ("ok", "extra", "same_init"):
            return found
        x = draw(2, 4, d_in, seed=seed + 1, scale=1.0)
        outputs = [as_double(module.sub(f"heads.{h}").forward(x)) for h in range(heads)]
        out = as_double(module.forward(x))
        if out is None or any(part is None for part in outputs):
            return found
        joins = {"heads_reversed": torch.cat(outputs[::-1], dim=-1), "concat_tokens": torch.cat(outputs, dim=1),
                 "concat_batch": torch.cat(outputs, dim=0), "stack_not_cat": torch.stack(outputs, dim=-1),
                 "first_head_only": outputs[0], "heads_summed": sum(outputs)}
        matched = [cause for cause, joined in joins.items()
                   if joined.shape == out.shape and torch.allclose(joined, out, atol=1e-5)]
        return found + [observation("signature", matched=matched, modelled=joins)]
    except StudentError as error:
        return crash_observations(error)
