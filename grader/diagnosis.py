"""What most likely went wrong in a step, in the chapter's words.

All evidence is gathered in the judge, from plain data:

1. signatures: a hidden test computes with the judge's own oracle what known
   faulty versions of the reference give on its probe, and the student's output
   equals (or comes very close to) one of them (`testing.expect_close(suspects=...)`);
2. properties whose failure has one meaning (columns that sum to one, survivors
   scaled by exactly 1, the same head object repeated...), named where they are
   checked (`testing.Failure(..., cause=...)`), or, for the public tests, by the
   wording of their failure (`PROPERTY_SIGNS`);
3. the student's own crash, sent back as plain data (exception type, message and
   failing line): a mask of the wrong size, `.T` on a batch, `view` without
   `contiguous()`, a bias that does not exist...

A step's diagnosis is the cause with the most evidence behind it; no cause is
named without evidence. Nothing here knows a hidden expected value.
"""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Cause:
    key: str
    title: str  # what is wrong, as the chapter would say it
    fix: str  # what to do about it


CAUSES = {cause.key: cause for cause in (
    # projection
    Cause("qkv_order", "W_query, W_key and W_value are drawn or returned in the wrong order",
          "right after the seed, draw W_query, then W_key, then W_value, and return them in that order"),
    Cause("randn_init", "the weights are drawn with torch.randn instead of torch.rand",
          "the chapter initialises them with torch.rand (uniform in [0, 1))"),
    Cause("weight_shape", "the weight matrices have shape (d_out, d_in) instead of (d_in, d_out)",
          "create them as torch.rand(d_in, d_out), so that x @ W maps d_in features to d_out"),
    Cause("qk_swapped", "queries and keys are swapped",
          "queries = x @ W_query and keys = x @ W_key, returned as (queries, keys, values)"),
    Cause("projection_mixup", "a projection uses another projection's weight matrix",
          "queries use W_query, keys W_key, values W_value"),
    Cause("weight_transposed", "the projection multiplies by W.T instead of W",
          "with W of shape (d_in, d_out) the projection is x @ W (W.T is the nn.Linear convention)"),
    # scaling
    Cause("scores_kq", "the scores are keys @ queries^T, the transpose of the score matrix",
          "scores[i, j] is query i · key j: queries @ keys.transpose(-2, -1)"),
    Cause("softmax_dim", "the softmax is taken over the wrong axis (each column sums to one instead of each row)",
          "normalise each row of scores: softmax(..., dim=-1)"),
    Cause("no_scale", "the scaling is missing: softmax of the raw scores",
          "divide the scores by sqrt(d_k) before the softmax"),
    Cause("scale_dk", "the scores are divided by d_k instead of sqrt(d_k)",
          "divide by d_k**0.5"),
    Cause("scale_after", "the scaling is applied after the softmax, so the rows no longer sum to one",
          "divide the scores, not the weights, by sqrt(d_k), before the softmax"),
    Cause("scale_d_in", "the scores are scaled by sqrt(d_in), the wrong dimension",
          "d_k is the size of each key vector: keys.shape[-1]"),
    Cause("scale_d_out", "the scores are scaled by sqrt(d_out) instead of sqrt(head_dim)",
          "in multi-head attention each head's keys have head_dim features: divide by head_dim**0.5"),
    Cause("context_transposed", "the context vectors use the transposed attention weights",
          "context vector i is sum_j weights[i, j] * values[j]: attn_weights @ values"),
    Cause("variance_over_dim", "the dot products are divided by dim instead of sqrt(dim)",
          "dividing q·k by sqrt(dim) divides its variance by dim"),
    Cause("variance_not_recomputed", "the variance is divided by sqrt(dim) instead of measured on the scaled "
          "dot products", "compute (dots / sqrt(dim)).var(): scaling by sqrt(dim) divides the variance by dim"),
    Cause("variance_not_seeded", "dot_product_variance ignores its seed, so its result is not reproducible",
          "draw q and k after torch.manual_seed(seed) (or from a torch.Generator seeded with it)"),
    Cause("variance_uniform", "q and k are drawn with torch.rand (uniform) instead of torch.randn",
          "the variance argument needs standard-normal q and k: torch.randn"),
    # masking
    Cause("mask_hides_diagonal", "the mask hides the diagonal: a token cannot see itself, and the first "
          "token sees nothing (its row becomes NaN)", "hide only j > i: torch.triu(..., diagonal=1)"),
    Cause("mask_past", "the mask hides the past instead of the future (tril instead of triu, or a missing ~)",
          "token i may see positions j <= i: hide torch.triu(..., diagonal=1)"),
    Cause("zero_fill", "the masked scores are filled with 0 instead of -inf, so the future still gets weight",
          "fill the hidden scores with -torch.inf before the softmax"),
    Cause("no_mask", "the causal mask has no effect: the result of masked_fill is thrown away",
          "use masked_fill_ (in place) or assign the result: scores = scores.masked_fill(...)"),
    Cause("not_renormalised", "the rows are not renormalised after the future is zeroed",
          "divide each row by its sum (keepdim=True), or fill with -inf before the softmax"),
    Cause("keepdim_missing", "the row sums are taken without keepdim=True, so they divide along the wrong axis",
          "masked / masked.sum(dim=-1, keepdim=True)"),
    # dropout
    Cause("dropout_no_rescale", "dropout does not rescale the surviving weights",
          "multiply the survivors by 1/(1-p) so that the expected value is unchanged"),
    Cause("dropout_rescale_by_p", "dropout divides the survivors by p instead of (1-p)",
          "scale the survivors by 1/(1-p)"),
    Cause("dropout_scaled_down", "dropout multiplies the survivors by (1-p) instead of dividing by it",
          "scale the survivors by 1/(1-p)"),
    Cause("dropout_keep_probability", "dropout takes p as the probability of keeping a weight",
          "p is the probability of dropping: keep a weight when rand >= p"),
    Cause("dropout_same_mask", "dropout reuses the same mask on every call (a fixed seed inside?)",
          "draw a fresh random mask on every call; do not seed inside the function"),
    Cause("dropout_mask_shape", "the dropout mask does not have the full shape of the weights (whole rows or "
          "columns are dropped together)", "draw the mask with the shape of the weights: torch.rand_like(weights)"),
    Cause("dropout_in_eval", "dropout is active in evaluation mode",
          "only drop while training: return the weights unchanged when training is False"),
    # causal_attention
    Cause("mask_not_sliced", "the mask is not sliced to the sequence length",
          "use self.mask[:num_tokens, :num_tokens] for inputs shorter than context_length"),
    Cause("mask_not_buffer", "the mask is not a registered buffer, so it does not move with the module",
          "self.register_buffer('mask', torch.triu(...)) instead of a plain attribute"),
    Cause("dropout_before_softmax", "dropout is applied to the scores before the softmax (0 x -inf gives NaN)",
          "apply self.dropout to the attention weights, after the softmax"),
    Cause("dropout_not_applied", "the dropout module is never applied to the attention weights",
          "pass the attention weights through self.dropout right after the softmax"),
    Cause("dropout_on_context", "dropout acts on the context vectors or the output, not on the attention weights",
          "apply self.dropout to attn_weights, before attn_weights @ values"),
    Cause("qkv_bias_ignored", "qkv_bias is ignored: the projections have no bias",
          "nn.Linear(d_in, d_out, bias=qkv_bias)"),
    Cause("keys_transpose", "the keys are transposed on the wrong axes (keys.T on a batch reverses every axis)",
          "transpose the last two axes: keys.transpose(-2, -1)"),
    # mha_wrapper
    Cause("heads_shared", "the heads share one module: [CausalAttention(...)] * num_heads repeats one object",
          "create a new CausalAttention for each head"),
    Cause("heads_not_modulelist", "the heads are kept in a plain Python list, not an nn.ModuleList",
          "wrap the list of heads in nn.ModuleList so that PyTorch sees their parameters"),
    Cause("concat_tokens", "the heads are concatenated along the token axis (dim=1)",
          "concatenate along the feature axis: torch.cat(..., dim=-1)"),
    Cause("concat_batch", "the heads are concatenated along the batch axis (dim=0)",
          "concatenate along the feature axis: torch.cat(..., dim=-1)"),
    Cause("first_head_only", "only one head's output is used",
          "concatenate the outputs of all heads: torch.cat([head(x) for head in self.heads], dim=-1)"),
    Cause("heads_reversed", "the heads are concatenated in reverse order",
          "keep the heads' order: head 0 first"),
    Cause("qkv_bias_not_passed", "qkv_bias is not passed on to the heads",
          "give each head the wrapper's qkv_bias argument too"),
    Cause("dropout_not_passed", "the dropout rate is not passed on to the heads",
          "give each head the wrapper's dropout rate too"),
    # multihead_attention
    Cause("split_no_transpose", "the heads are split with view(b, num_heads, n, head_dim) without the transpose",
          "view(b, n, num_heads, head_dim), then transpose(1, 2)"),
    Cause("merge_no_transpose", "the heads are merged back without transposing (1, 2) first",
          "context.transpose(1, 2).contiguous().view(b, n, d_out)"),
    Cause("view_not_contiguous", "view is called on a transposed tensor without .contiguous()",
          "call .contiguous() before .view(...), or use .reshape(...)"),
    Cause("no_out_proj", "out_proj is skipped", "apply self.out_proj to the merged context vectors last"),
    Cause("out_proj_bias", "out_proj has no bias", "out_proj is nn.Linear(d_out, d_out): it always has a bias"),
    Cause("head_dim_wrong", "head_dim is not d_out // num_heads", "head_dim = d_out // num_heads"),
    Cause("no_divisibility_check", "d_out is not checked to be divisible by num_heads",
          "assert d_out % num_heads == 0 (or raise ValueError) in __init__"),
)}

# Weight of each kind of evidence when causes compete within a step.
STRENGTH = {"signature": 3, "property": 2, "crash": 1}

# Public tests' failure wording whose property has a single cause (their raise sites carry no cause).
PROPERTY_SIGNS = (
    (re.compile(r"should be a registered buffer"), "mask_not_buffer"),
    (re.compile(r"should raise an error: \d+ features cannot be split"), "no_divisibility_check"),
    (re.compile(r"with training=False the weights must come back unchanged"), "dropout_in_eval"),
    (re.compile(r"should be an nn\.ModuleList"), "heads_not_modulelist"),
)

SHAPE_CLASH = re.compile(r"must match the size of tensor|doesn't match the broadcast shape|"
                         r"Expected size for first two dimensions|shapes cannot be multiplied|size mismatch")
KEYS_TRANSPOSED = re.compile(r"\b(keys|k|key)\s*\.\s*(T\b|transpose\s*\(|permute\s*\()")
WEIGHT_TRANSPOSED = re.compile(r"\bW_\w+\s*\.\s*(T\b|t\(\))")
MASK_UNSLICED = re.compile(r"mask")
MISSING_PARAMETER = re.compile(r"^(?:heads\.\d+\.)?(W_query|W_key|W_value|out_proj)\.bias is not an nn\.Parameter"
                               r".*\(found NoneType\)")


def describe(key):
    """The cause's sentence: what is wrong, then what to do."""
    cause = CAUSES[key]
    return f"{cause.title}; {cause.fix}"


def crash_cause(error):
    """The likely cause behind a crash of the student's code (`error`: type, message, failing line)."""
    kind, message, line = error.get("type") or "", error.get("message") or "", error.get("location") or ""
    code = line.split(": ", 1)[-1] if ": " in line else line
    if kind == "InjectionError":
        found = MISSING_PARAMETER.search(message)
        if found:
            return "out_proj_bias" if found.group(1) == "out_proj" else "qkv_bias_ignored"
        return None
    if "view size is not compatible with input tensor's size and stride" in message:
        return "view_not_contiguous"
    if re.search(r"shape '\[[\d, ]+\]' is invalid for input of size", message) and "head" in code:
        return "head_dim_wrong"
    if SHAPE_CLASH.search(message):
        if KEYS_TRANSPOSED.search(code):
            return "keys_transpose"
        if WEIGHT_TRANSPOSED.search(code):
            return "weight_transposed"
        if MASK_UNSLICED.search(code) and not re.search(r"mask[^@]*\[\s*:", code):
            return "mask_not_sliced"
    return None


def evidence_of(test):
    """(cause, strength) of one failing test (a dict as in results.json plus `details`), or (None, 0)."""
    details = test.get("details") or {}
    if details.get("cause"):
        return details["cause"], STRENGTH[details.get("kind", "property")]
    if details.get("error"):
        cause = crash_cause(details["error"])
        if cause:
            return cause, STRENGTH["crash"]
    for pattern, cause in PROPERTY_SIGNS:
        if pattern.search(test.get("output") or ""):
            return cause, STRENGTH["property"]
    return None, 0


def diagnose_step(tests):
    """The step's most likely cause from its failing tests: {cause, title, fix, evidence, test} or None.
    The evidence quotes the failed properties behind the cause, the most telling first (a row sum
    says more than "outputs differ")."""
    weights, support = {}, {}
    for test in tests:
        if test["score"] >= test["max_score"]:
            continue
        cause, strength = evidence_of(test)
        if cause:
            weights[cause] = weights.get(cause, 0) + strength
            support.setdefault(cause, []).append((strength, test))
    if not weights:
        return None
    order = list(support)
    best = max(weights, key=lambda key: (weights[key], -order.index(key)))
    cause = CAUSES[best]
    # Properties first (they state what is wrong with the output), then signatures, then crashes.
    ranked = sorted(support[best], key=lambda item: (item[0] != STRENGTH["property"], -item[0]))
    clauses, kinds = [], set()
    for strength, test in ranked:  # at most one observation of each kind of evidence
        clause = first_clause(test.get("output") or "")
        if clause and strength not in kinds:
            clauses.append(clause)
            kinds.add(strength)
        if len(clauses) == 2:
            break
    return {"cause": best, "title": cause.title, "fix": cause.fix, "test": ranked[0][1]["name"],
            "evidence": "; ".join(clauses)}


def diagnose(tests):
    """{step: diagnosis or None} for the steps that lost points; `tests` are TestResults or
    results.json entries (with the per-test `extra_data` this grader writes)."""
    records, failed_steps = {}, []
    for test in tests:
        record = as_record(test)
        step = record["name"].partition(":")[0]
        records.setdefault(step, []).append(record)
        if record["score"] < record["max_score"] and step not in failed_steps:
            failed_steps.append(step)
    return {step: diagnose_step(records[step]) for step in failed_steps}


def as_record(test):
    """A test result as a plain dict: name, score, max_score, output, visibility, details."""
    if isinstance(test, dict):
        record = dict(test)
        record.setdefault("details", test.get("extra_data") or {})
        return record
    return {"name": test.name, "score": test.score, "max_score": test.max_score, "output": test.output,
            "visibility": test.visibility, "details": getattr(test, "details", None) or {}}


def first_clause(message, limit=240):
    """The observation at the start of a failure message, before its advice: the first line, up to the
    first "; " outside parentheses, shortened."""
    text = message.split("\n", 1)[0]
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(char, 0)
        if depth == 0 and text.startswith("; ", index):
            text = text[:index]
            break
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- limits: the step's worker ran out of time or memory, crashed or exited -----------------------------------
LIMIT_SIGNS = (
    ("time", re.compile(r"^(submission )?time limit:|used more than its CPU-time budget")),
    ("memory", re.compile(r"^memory limit:|MemoryError|out of memory|can't allocate memory|"
                          r"Cannot allocate memory")),
    ("crash", re.compile(r"process crashed \(signal")),
    ("exit", re.compile(r"process exited \(exit code")),
    ("channel", re.compile(r"wrote garbage to the grader's channel")),
)


def limit_of(message):
    """'time', 'memory', 'crash', 'exit' or 'channel' when a test's failure is a limit the step hit."""
    for kind, pattern in LIMIT_SIGNS:
        if pattern.search(message or ""):
            return kind
    return None
