"""The fault model: the chapter's known mistakes, each with the behaviour that tells it apart, and the rule.

A probe looks at one behaviour of the student's code and reports an outcome from
a small vocabulary (`PROBES`): the row sums of the attention weights, the
temperature of their softmax, which positions the mask hides, how dropout
rescales... Each known mistake (`Cause`) says, in its `signature`, which
outcomes it gives on the probes where its effect is certain; a probe it does
not list says nothing about it. Checks also report two kinds of direct
evidence: a signature match (the output equals what the judge's reference
gives with that fault, on the same inputs: `signature`) and a property with one
meaning, such as a crash pattern (`cause`).

The rule (`name_cause`): a cause is named only when it is the one known fault
that matches every probe: supported by at least one observation, contradicted
by none. Otherwise nothing is named and the checks say which property failed.

Plain data only, no torch: the same rule runs in the judge, in the feedback and
in the student's own checker, and nothing here knows a hidden expected value.
"""

import re
from dataclasses import dataclass, field

# probe: (the property in words, {outcome: what it means}). "ok" is always the right behaviour.
PROBES = {
    "rows": ("row sums", {
        "axis": "they sum to one along another axis instead of along each row",
        "constant": "every row sums to the same constant below one",
        "short": "the future is zero but the rows sum to less than one",
        "nan": "some rows are NaN", "raw": "some weights are negative or above one",
        "dropout": "in eval mode every row sums to 1/(1-p), for the module's dropout rate p",
        "other": "the rows do not sum to one"}),
    "renorm": ("row sums after renormalising", {
        "axis": "they sum to one along the columns instead of along the rows",
        "short": "the rows sum to less than one",
        "softmax": "they are a softmax of the masked weights: the zeroed future gets weight exp(0) again",
        "other": "the rows do not sum to one"}),
    "temperature": ("softmax scale", {
        "one": "the scores are not scaled", "d_k": "the scores are divided by d_k",
        "inverse": "the scores are multiplied by sqrt(d_k)", "d_in": "the scores are divided by sqrt(d_in)",
        "d_out": "the scores are divided by sqrt(d_out)", "heads": "the scores are divided by sqrt(num_heads)",
        "tokens": "the scores are divided by sqrt(num_tokens)", "half": "the scores are divided by d_k / 2",
        "twice": "the scores are divided by 2 * d_k",
        "keys": "the scores are divided by the number of keys (num_tokens)", "other": "the scale is not sqrt(d_k)",
        "unfit": "the weights are no softmax of the scores the probe computed, so no scale can be read from them"}),
    "pattern": ("mask pattern", {
        "diagonal": "the diagonal is hidden too", "past": "the past is hidden instead of the future",
        "next": "each token also sees the next token", "none": "nothing is hidden",
        "all": "every position is hidden", "other": "the hidden positions are not exactly j > i"}),
    "nan": ("NaN", {
        "future": "NaN sits exactly on the future positions (each was normalised along an axis on which every "
                  "entry is hidden: a softmax over only -inf, or a division by a sum of zeros)",
        "first": "only the first token's row is NaN (nothing is left visible to it)",
        "last": "only the last token's row is NaN",
        "hidden_rows": "every row that hides a position is NaN and the last row, which hides none, is not: the "
                       "hidden scores are +inf or NaN, not -inf",
        "all": "every row is NaN: every score of every row became -inf or NaN before the softmax (outputs alone "
               "cannot tell a mask that hides everything from 0 x -inf, a 0/1 mask multiplied by -inf)",
        "other": "NaN appears where no mask pattern puts it"}),
    "mask_values": ("mask buffer values", {"all": "every entry of the mask buffer is set (nothing is left visible)",
                                           "other": "the mask buffer is not torch.triu(ones, diagonal=1)"}),
    "heads_layout": ("heads' layout", {
        "merge": "with equal attention everywhere, the output is each head's context viewed to (b, n, d_out) "
                 "without transpose(1, 2): tokens and heads are mixed when the heads are merged",
        "split": "with equal attention everywhere, the output is what values viewed straight to (b, num_heads, n, "
                 "head_dim) give: tokens and heads are mixed when the heads are split",
        "other": "with equal attention everywhere, the output holds the right numbers in other places: the heads "
                 "are split or merged in another order than (b, n, num_heads, head_dim) <-> (b, num_heads, n, "
                 "head_dim)",
        "strided": "with heads that attend differently, each head works on every num_heads-th feature (a view to "
                   "(b, n, head_dim, num_heads)), not on its own block of head_dim features",
        "swapped": "with heads that attend differently, there are head_dim heads of num_heads features each (a view "
                   "to (b, n, head_dim, num_heads), then transpose(1, 2))"}),
    "variance": ("variance of q·k", {
        "std": "it is the standard deviation (about sqrt(dim)), not the variance",
        "unsummed": "it is about 1 whatever dim is: the variance of single products q_i k_i, not of their sum",
        "same_draw": "it is about 2 * dim: the variance of q·q (q and k are the same draw)",
        "uniform": "it is what uniform q and k give", "other": "it is not about dim"}),
    "batch_size": ("batch sizes", {"tokens": "only a batch of as many sequences as tokens runs: the mask is sized "
                                            "from the batch axis"}),
    "batch_order": ("axes of x", {"swapped": "the output has shape (n, b, d_out), and is right when b == n: the "
                                              "batch and token axes of x are swapped"}),
    "value_path": ("values", {"other": "they do not come from W_value alone"}),
    "causality": ("causality", {"leak": "changing future tokens changes earlier outputs"}),
    "future_scores": ("future scores", {"leak": "changing the scores of future positions changes the weights"}),
    "batch": ("batch independence", {"mixed": "changing one sequence changes the others"}),
    "eval": ("dropout in eval mode", {"random": "dropout is active when not training"}),
    "rate": ("dropout rate", {
        "none": "nothing is dropped", "keep": "a share 1-p is dropped instead of p", "other": "the share is not p"}),
    "rescale": ("dropout rescaling", {
        "one": "they are not rescaled", "inverse_p": "they are divided by p", "p": "they are multiplied by p",
        "keep": "they are multiplied by (1-p)", "twice": "they are divided by (1-p) twice",
        "other": "they are not multiplied by 1/(1-p)"}),
    "fresh": ("fresh dropout masks", {"same": "every call drops the same weights"}),
    "layout": ("dropout mask layout", {
        "lines": "whole rows or columns are dropped together",
        "batch": "every sequence of the batch drops the same weights",
        "heads": "every head drops the same weights"}),
    "target": ("dropout target", {
        "outside": "it acts on values, context vectors or the output, not on the attention weights",
        "nan": "training mode gives NaN",
        "scores": "the training weights are a softmax of scores of which some were zeroed and the rest divided by "
                  "(1-p): dropout acts on the scores, before the softmax"}),
    "lengths": ("inputs of every length up to context_length", {
        "short_crash": "inputs shorter than context_length raise while the full length works",
        "long_crash": "inputs of the full context_length raise while shorter ones work",
        "state": "a new module takes the full context_length, but not after shorter inputs: forward changes the "
                 "module between calls"}),
    "init": ("seeded weights", {
        "order": "the right draws in the wrong order", "randn": "some are torch.randn draws",
        "shape": "they have shape (d_out, d_in)", "fused": "one fused draw is split in three",
        "reseeded": "they do not follow the caller's seed", "other": "they are not the chapter's draws"}),
    "bias_off": ("bias with qkv_bias=False", {"present": "they have a bias"}),
    "bias_on": ("bias with qkv_bias=True", {"absent": "they have no bias"}),
    "linear": ("projection sizes", {"swapped": "they map d_out -> d_in"}),
    "dropout_module": ("self.dropout", {
        "missing": "it is not an nn.Dropout", "rate": "its p is not the dropout argument"}),
    # A module that keeps no `mask` at all builds it in forward: its outputs (and, on a GPU, its device) judge it.
    # "missing" is only in results written before that (they failed such a module).
    "mask_buffer": ("mask buffer", {"attribute": "it is a plain attribute", "parameter": "it is an nn.Parameter",
                                    "missing": "there is none"}),
    "out_proj": ("out_proj", {
        "missing": "there is none, or the output does not use it", "per_head": "it maps head_dim -> head_dim",
        "shape": "it does not map d_out -> d_out",
        "bias": "it has no bias"}),
    "heads": ("heads", {
        "list": "they are in a plain list", "shared": "one module is repeated", "same_init": "they start identical",
        "sequential": "they are chained in an nn.Sequential", "size": "each has d_out // num_heads features",
        "extra": "the wrapper adds layers of its own"}),
}

# Kinds of direct evidence: "signature" (equals a known fault's output), "cause" (a property with one meaning).
# "crash": a crash whose pattern has one meaning (the weakest evidence: it decides only when nothing else does).
DIRECT = ("signature", "cause", "crash")


@dataclass(frozen=True)
class Cause:
    key: str
    title: str  # what is wrong, as the chapter would say it
    fix: str  # what to do about it
    # probe -> the outcomes this fault gives there; "~outcome": possible, but no evidence for this fault
    signature: dict = field(default_factory=dict)


def sig(**probes):
    """A signature from keyword arguments: sig(rows="ok", out_proj="missing|~ok")."""
    return {probe: frozenset(outcomes.split("|")) for probe, outcomes in probes.items()}


# The rescaling faults: measured in training mode against eval mode, so only where eval mode drops nothing (dropout
# active in eval mode drops and rescales both outputs alike, and the rescaling then reads as "one").
EVAL_OFF = "ok"

CAUSES = {cause.key: cause for cause in (
    # ---------------------------------------------------------------- projection
    Cause("qkv_order", "W_query, W_key and W_value are drawn, created or returned in the wrong order",
          "right after the seed, create W_query, then W_key, then W_value, and return them in that order",
          sig(init="order")),
    Cause("randn_init", "the weights are drawn with torch.randn instead of torch.rand",
          "the chapter initialises them with torch.rand (uniform in [0, 1))", sig(init="randn")),
    Cause("init_fused", "the three matrices are cut from one fused draw, torch.rand(d_in, 3 * d_out), so each "
          "holds other random numbers than the chapter's", "make three torch.rand draws of shape (d_in, d_out), one "
          "after another: query, then key, then value", sig(init="fused")),
    Cause("init_reseeded", "the function seeds the generator itself (torch.manual_seed inside it), so the caller's "
          "seed is ignored", "do not call torch.manual_seed inside the function: the caller seeds once, then the "
          "three draws follow one another", sig(init="reseeded")),
    Cause("weight_shape", "the weight matrices have shape (d_out, d_in) instead of (d_in, d_out)",
          "create them as torch.rand(d_in, d_out) (or nn.Linear(d_in, d_out)), so that they map d_in features "
          "to d_out", sig(init="shape", linear="swapped")),
    Cause("project_one_token", "only one token is projected (the chapter's x_2 @ W_query example), not every token",
          "multiply the whole input: x @ W_query gives the query of every token at once, shape (..., n, d_out)"),
    Cause("qk_swapped", "queries and keys are swapped",
          "queries = x @ W_query and keys = x @ W_key, returned as (queries, keys, values)"),
    Cause("projection_mixup", "a projection uses another projection's weight matrix",
          "queries use W_query, keys W_key, values W_value", sig(value_path="other|~ok")),
    Cause("weight_transposed", "the projection multiplies by W.T instead of W",
          "with W of shape (d_in, d_out) the projection is x @ W (W.T is the nn.Linear convention)"),
    Cause("weight_left", "the projection multiplies W @ x instead of x @ W",
          "put the inputs on the left: x @ W maps each token's d_in features to d_out"),
    Cause("weights_not_parameters", "the weight matrices are plain tensors, not nn.Parameter",
          "wrap each matrix in nn.Parameter(...), so that PyTorch trains and moves them"),
    Cause("no_projection", "the inputs themselves are used as queries, keys and values",
          "project them first: x times W_query gives the queries, x times W_key the keys, x times W_value the values"),
    # ---------------------------------------------------------------- scaling
    Cause("keys_not_transposed", "the keys are not transposed: queries @ keys multiplies (n, d_k) by (n, d_k)",
          "transpose the keys' last two axes: queries @ keys.transpose(-2, -1) (keys.T for one sequence)"),
    Cause("scores_kq", "the scores are keys @ queries^T, the transpose of the score matrix",
          "scores[i, j] is query i · key j: queries @ keys.transpose(-2, -1)"),
    Cause("softmax_dim", "the softmax is taken over the wrong axis (the weights do not sum to one along each row)",
          "normalise each row of scores: softmax(..., dim=-1)", sig(rows="axis|~nan", nan="~future")),
    Cause("no_scale", "the scaling is missing: softmax of the raw scores",
          "divide the scores by sqrt(d_k) before the softmax", sig(rows="ok", temperature="one")),
    Cause("scale_dk", "the scores are divided by d_k instead of sqrt(d_k)",
          "divide by d_k**0.5", sig(rows="ok", temperature="d_k")),
    Cause("scale_after", "the scaling is applied after the softmax, so the rows no longer sum to one",
          "divide the scores, not the weights, by sqrt(d_k), before the softmax",
          sig(rows="constant", temperature="one")),
    Cause("scale_multiplied", "the scores are multiplied by sqrt(d_k) instead of divided by it",
          "divide: scores / d_k**0.5 (or multiply by d_k**-0.5)", sig(rows="ok", temperature="inverse")),
    Cause("scale_d_in", "the scores are scaled by sqrt(d_in), the wrong dimension",
          "d_k is the size of each key vector: keys.shape[-1]", sig(rows="ok", temperature="d_in")),
    Cause("scale_d_out", "the scores are scaled by sqrt(d_out) instead of sqrt(head_dim)",
          "in multi-head attention each head's keys have head_dim features: divide by head_dim**0.5",
          sig(rows="ok", temperature="d_out")),
    Cause("scale_num_heads", "the scores are scaled by sqrt(num_heads) instead of sqrt(head_dim)",
          "each head's keys have head_dim features: divide by keys.shape[-1]**0.5 (on (b, heads, n, head_dim) "
          "keys, shape[1] is num_heads)", sig(rows="ok", temperature="heads")),
    Cause("scale_num_tokens", "the scores are scaled by sqrt(num_tokens) instead of sqrt(d_k)",
          "d_k is the size of each key vector, keys.shape[-1], not the number of tokens",
          sig(rows="ok", temperature="tokens")),
    Cause("scale_num_keys", "the scores are divided by the number of keys (num_tokens) instead of sqrt(d_k)",
          "divide by the square root of each key vector's size: keys.shape[-1] ** 0.5",
          sig(rows="ok", temperature="keys")),
    Cause("scale_precedence", "the scale is d_k / 2 or 2 * d_k, not sqrt(d_k): d_k**1/2 is read as (d_k**1) / 2 "
          "because ** binds tighter than / (and scores / d_k**1/2 is (scores / d_k) / 2)",
          "write d_k**0.5 (or d_k**(1/2), or math.sqrt(d_k))", sig(rows="ok", temperature="half|twice")),
    Cause("context_transposed", "the context vectors use the transposed attention weights",
          "context vector i is sum_j weights[i, j] * values[j]: attn_weights @ values"),
    Cause("context_own_value", "each context vector is its own token's value vector: weight[i, j] is paired with "
          "value[i] instead of value[j] (a broadcast on the wrong axes?)",
          "context vector i is sum_j weights[i, j] * values[j]: attn_weights @ values"),
    Cause("variance_over_dim", "the dot products are divided by dim instead of sqrt(dim)",
          "dividing q·k by sqrt(dim) divides its variance by dim"),
    Cause("variance_not_recomputed", "the variance is divided by sqrt(dim) instead of measured on the scaled "
          "dot products", "compute (dots / sqrt(dim)).var(): scaling by sqrt(dim) divides the variance by dim"),
    Cause("variance_not_seeded", "dot_product_variance ignores its seed, so its result is not reproducible",
          "draw q and k after torch.manual_seed(seed) (or from a torch.Generator seeded with it)"),
    Cause("variance_uniform", "q and k are drawn with torch.rand (uniform) instead of torch.randn",
          "the variance argument needs standard-normal q and k: torch.randn", sig(variance="uniform")),
    Cause("variance_is_std", "variance_before is a standard deviation, not a variance (.std() or a square root "
          "taken)", "return dots.var() (the variance), not dots.std()", sig(variance="std")),
    Cause("dots_not_summed", "the dot products are never summed: the variance is of the element-wise products "
          "q * k", "q·k is (q * k).sum(dim=-1): sum the products over the vector's dim entries first",
          sig(variance="unsummed")),
    Cause("variance_same_draw", "q and k are the same draw (the generator is seeded again before drawing k?), so "
          "q·k is q·q", "seed one generator once, then draw q and k from it one after the other",
          sig(variance="same_draw")),
    # ---------------------------------------------------------------- masking
    Cause("mask_hides_diagonal", "the mask hides the diagonal: a token cannot see itself, and the first "
          "token sees nothing (its row becomes NaN)", "hide only j > i: torch.triu(..., diagonal=1)",
          sig(pattern="diagonal", nan="first")),
    Cause("mask_past", "the mask hides the past instead of the future (tril instead of triu, a missing ~, or a "
          "keep-mask used as a hide-mask)", "token i may see positions j <= i: hide torch.triu(..., diagonal=1)",
          sig(pattern="past", nan="last")),
    Cause("mask_off_by_one", "the mask is shifted by one diagonal: each token also sees the next token",
          "hide exactly j > i: torch.triu(..., diagonal=1)",
          sig(pattern="next", causality="leak", future_scores="leak")),
    Cause("mask_all", "the mask hides every position (torch.triu was forgotten), so every row is NaN",
          "hide only the future: torch.triu(torch.ones(n, n), diagonal=1)",
          sig(pattern="all", nan="~all", mask_values="all")),
    Cause("fill_positive_inf", "the hidden scores are filled with +inf (or NaN) instead of -inf, so every row that "
          "hides a position becomes NaN", "fill the hidden scores with -torch.inf (minus infinity): exp(-inf) = 0",
          sig(nan="hidden_rows", temperature="ok")),
    Cause("zero_fill", "the masked scores are filled with 0 instead of -inf, so the future still gets weight",
          "fill the hidden scores with -torch.inf before the softmax",
          sig(pattern="none", causality="leak", future_scores="ok", rows="ok", renorm="ok")),
    Cause("no_mask", "the causal mask has no effect: the result of masked_fill is thrown away",
          "use masked_fill_ (in place) or assign the result: scores = scores.masked_fill(...)",
          sig(pattern="none", causality="leak", future_scores="leak", rows="ok", temperature="ok", renorm="ok")),
    Cause("not_renormalised", "the rows are not renormalised after the future is zeroed",
          "divide each row by its sum (keepdim=True), or fill with -inf before the softmax",
          sig(rows="short", renorm="short", pattern="ok")),
    Cause("keepdim_missing", "the row sums are taken without keepdim=True, so they divide along the wrong axis",
          "masked / masked.sum(dim=-1, keepdim=True)"),
    Cause("renorm_columns", "the masked weights are divided by their column sums instead of their row sums",
          "divide each row by its own sum: masked / masked.sum(dim=-1, keepdim=True)", sig(renorm="axis")),
    Cause("renorm_softmax", "the masked weights are renormalised with a second softmax, which gives the zeroed "
          "future weight exp(0) again", "divide each row by its own sum: masked / masked.sum(dim=-1, keepdim=True)",
          sig(renorm="softmax")),
    Cause("mask_float", "causal_mask returns a float 0/1 mask, not a bool one",
          "return a bool tensor (True = hidden): torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1), or "
          "add .bool()"),
    Cause("returns_weights", "forward returns a (num_tokens x num_tokens) matrix per sequence, as the attention "
          "weights are, instead of the context vectors (num_tokens x d_out)",
          "end forward with context_vec = attn_weights @ values (after dropout on the weights) and return that"),
    Cause("softmax_overflow", "the softmax is computed as exp(scores) / sum without subtracting each row's largest "
          "score first, so large scores overflow to inf and the weights become NaN",
          "use torch.softmax(..., dim=-1), which subtracts each row's maximum before exp (or subtract it yourself)"),
    Cause("no_softmax", "the softmax is missing: the (masked, scaled) scores are used as attention weights",
          "turn the scores into weights with torch.softmax(scores / sqrt(d_k), dim=-1)",
          sig(rows="raw", temperature="~other|~unfit")),
    # ---------------------------------------------------------------- dropout
    Cause("dropout_no_rescale", "dropout does not rescale the surviving weights",
          "multiply the survivors by 1/(1-p) so that the expected value is unchanged",
          sig(rescale="one", rate="ok", eval=EVAL_OFF)),
    Cause("dropout_rescale_by_p", "dropout divides the survivors by p instead of (1-p)",
          "scale the survivors by 1/(1-p)", sig(rescale="inverse_p", rate="ok", eval=EVAL_OFF)),
    Cause("dropout_scaled_down", "dropout multiplies the survivors by (1-p) instead of dividing by it",
          "scale the survivors by 1/(1-p)", sig(rescale="keep", rate="ok", eval=EVAL_OFF)),
    Cause("dropout_scaled_by_p", "dropout multiplies the survivors by p instead of dividing by (1-p)",
          "scale the survivors by 1/(1-p)", sig(rescale="p", rate="ok", eval=EVAL_OFF)),
    Cause("dropout_rescaled_twice", "dropout divides the survivors by (1-p) twice",
          "rescale once: the survivors are multiplied by 1/(1-p), no more",
          sig(rescale="twice", rate="ok", eval=EVAL_OFF)),
    Cause("dropout_rescaled_outside", "the attention weights are divided by (1-p) outside dropout, which already "
          "rescales its survivors: they are scaled in eval mode too, and twice while training",
          "remove your own division: nn.Dropout multiplies the survivors by 1/(1-p), and only while training",
          sig(rows="dropout")),
    Cause("dropout_keep_probability", "dropout takes p as the probability of keeping a weight",
          "p is the probability of dropping: keep a weight when rand >= p", sig(rate="keep")),
    Cause("dropout_same_mask", "dropout reuses the same mask on every call (a fixed seed inside?)",
          "draw a fresh random mask on every call; do not seed inside the function", sig(fresh="same")),
    Cause("dropout_mask_shape", "the dropout mask does not have the full shape of the weights (whole rows or "
          "columns are dropped together)", "draw the mask with the shape of the weights: torch.rand_like(weights)",
          sig(layout="lines")),
    Cause("dropout_shared_across_batch", "one dropout mask is shared by every sequence of the batch (drawn for one "
          "matrix and broadcast)", "draw the mask with the full shape of the weights, batch included: "
          "torch.rand_like(attn_weights) (or use nn.Dropout)", sig(layout="batch")),
    Cause("dropout_shared_across_heads", "one dropout mask is shared by every head",
          "draw the mask with the full (b, num_heads, n, n) shape of the weights (or use nn.Dropout)",
          sig(layout="heads")),
    Cause("dropout_in_eval", "dropout is active in evaluation mode",
          "only drop while training: nn.Dropout follows module.train()/eval(); F.dropout and "
          "scaled_dot_product_attention need training=self.training / dropout_p=0 when not training",
          sig(eval="random")),
    # ---------------------------------------------------------------- causal_attention
    Cause("mask_not_sliced", "the mask is not sliced to the sequence length",
          "use self.mask[:num_tokens, :num_tokens] for inputs shorter than context_length",
          sig(lengths="short_crash")),
    Cause("mask_length", "the mask is built for fewer positions than context_length",
          "register torch.triu(torch.ones(context_length, context_length), diagonal=1) as the mask buffer",
          sig(lengths="long_crash")),
    Cause("mask_overwritten", "forward changes the module between calls (self.mask = self.mask[:n, :n] keeps "
          "the slice), so a later, longer input finds the mask too small",
          "slice into a local name, mask = self.mask.bool()[:num_tokens, :num_tokens], and leave the buffer as "
          "__init__ registered it", sig(lengths="state")),
    Cause("mask_sliced_by_batch", "the mask is sized from the batch axis (x.shape[0], or scores.shape[0] for a "
          "batch of scores) instead of the number of tokens", "take the size from the token axis: num_tokens = "
          "x.shape[1] and self.mask.bool()[:num_tokens, :num_tokens] in a module, scores.shape[-1] for scores",
          sig(batch_size="tokens")),
    Cause("linear_weight_matmul", "x @ W.weight multiplies by nn.Linear's weight as it is stored, (d_out, d_in)",
          "call the layer: self.W_query(x) (or x @ self.W_query.weight.T)"),
    Cause("mask_shape", "the mask does not have the (num_tokens, num_tokens) shape of the scores",
          "slice the buffer to self.mask.bool()[:num_tokens, :num_tokens] and let it broadcast over the batch"),
    Cause("mask_not_bool", "masked_fill_ is given a float mask",
          "convert it: self.mask.bool()[:num_tokens, :num_tokens]"),
    Cause("mask_not_buffer", "the mask is not a registered buffer, so it does not move with the module",
          "self.register_buffer('mask', torch.triu(...)) instead of a plain attribute",
          sig(mask_buffer="attribute|missing")),
    Cause("mask_parameter", "the mask is an nn.Parameter, so an optimiser would train it",
          "self.register_buffer('mask', torch.triu(...)): a buffer moves with the module but is not trained",
          sig(mask_buffer="parameter")),
    Cause("dropout_before_softmax", "dropout is applied to the scores before the softmax (a dropped score counts "
          "as 0, and after the mask 0 x -inf gives NaN)",
          "apply self.dropout to the attention weights, after the softmax", sig(target="nan|scores|~ok")),
    Cause("dropout_not_applied", "the dropout module is never applied to the attention weights",
          "pass the attention weights through self.dropout right after the softmax", sig(rate="none", target="~ok")),
    Cause("dropout_on_context", "dropout acts on the values, the context vectors or the output (it belongs on the "
          "attention weights alone)", "apply self.dropout to attn_weights only, before attn_weights @ values",
          sig(target="outside")),
    Cause("dropout_not_module", "self.dropout is not an nn.Dropout (the rate itself is stored and called?)",
          "create self.dropout as an nn.Dropout of the dropout rate and pass the attention weights through it",
          sig(dropout_module="missing")),
    Cause("dropout_rate_ignored", "the dropout rate is not the dropout argument (a hard-coded rate?)",
          "create self.dropout as nn.Dropout with the dropout argument, not a fixed rate", sig(dropout_module="rate")),
    Cause("qkv_bias_ignored", "qkv_bias is ignored: the projections have no bias",
          "nn.Linear(d_in, d_out, bias=qkv_bias)", sig(bias_on="absent")),
    Cause("qkv_bias_forced", "the projections have a bias although qkv_bias=False",
          "pass the flag on: nn.Linear(d_in, d_out, bias=qkv_bias) (nn.Linear has a bias by default)",
          sig(bias_off="present")),
    Cause("keys_transpose", "the keys are transposed on other axes than the last two (keys.T on a batch reverses every "
          "axis; transpose(1, 2) of split heads swaps heads and tokens)",
          "transpose the last two axes: keys.transpose(-2, -1)"),
    # ---------------------------------------------------------------- mha_wrapper
    Cause("heads_shared", "the heads share one module: [CausalAttention(...)] * num_heads repeats one object",
          "create a new CausalAttention for each head", sig(heads="shared")),
    Cause("heads_not_modulelist", "the heads are kept in a plain Python list, not an nn.ModuleList",
          "wrap the list of heads in nn.ModuleList so that PyTorch sees their parameters", sig(heads="list")),
    Cause("heads_same_init", "every head starts with the same weights (the seed is reset before each head?)",
          "create the heads one after another without reseeding, so that each draws its own weights",
          sig(heads="same_init")),
    Cause("heads_chained", "the heads are chained one after another (nn.Sequential) instead of run side by side",
          "keep them in an nn.ModuleList and feed x to every head: torch.cat([head(x) for head in self.heads], "
          "dim=-1)", sig(heads="sequential")),
    Cause("wrapper_head_size", "each head is built with d_out // num_heads features",
          "in the wrapper every head has d_out features: CausalAttention(d_in, d_out, ...); the output has "
          "num_heads * d_out", sig(heads="size")),
    Cause("wrapper_out_proj", "the wrapper adds layers of its own (an output projection?)",
          "the chapter's wrapper only concatenates its heads' outputs", sig(heads="extra")),
    Cause("head_args_order", "the heads' arguments are passed in the wrong order",
          "give every head its arguments in the order of its signature: d_in, d_out, context_length, dropout, "
          "qkv_bias"),
    Cause("init_not_defined", "the class has no __init__ of its own (misspelled?), so nn.Module's runs",
          "define def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)"),
    Cause("concat_tokens", "the heads are concatenated along the token axis (dim=1)",
          "concatenate along the feature axis: torch.cat(..., dim=-1)"),
    Cause("concat_batch", "the heads are concatenated along the batch axis (dim=0)",
          "concatenate along the feature axis: torch.cat(..., dim=-1)"),
    Cause("stack_not_cat", "the heads' outputs are stacked on a new axis instead of concatenated",
          "torch.cat([head(x) for head in self.heads], dim=-1) joins them along the features"),
    Cause("heads_summed", "the heads' outputs are added together instead of concatenated",
          "concatenate them along the feature axis: torch.cat([head(x) for head in self.heads], dim=-1)"),
    Cause("first_head_only", "only one head's output is used",
          "concatenate the outputs of all heads: torch.cat([head(x) for head in self.heads], dim=-1)"),
    Cause("heads_reversed", "the heads are concatenated in reverse order",
          "keep the heads' order: head 0 first"),
    Cause("qkv_bias_not_passed", "qkv_bias is not passed on to the heads",
          "give each head the wrapper's qkv_bias argument too"),
    Cause("dropout_not_passed", "the dropout rate is not passed on to the heads",
          "give each head the wrapper's dropout rate too"),
    # ---------------------------------------------------------------- multihead_attention
    Cause("split_no_transpose", "the heads are split without transpose(1, 2) (a view straight to the heads' "
          "layout mixes tokens and heads)", "view(b, n, num_heads, head_dim), then transpose(1, 2)",
          sig(heads_layout="split|~ok")),
    Cause("heads_view_order", "the heads are split with view(b, n, head_dim, num_heads): head_dim and num_heads "
          "are in the wrong order, so each head works on other features than its own block",
          "view(b, n, num_heads, head_dim), then transpose(1, 2) (and merge back the same way in reverse)",
          sig(heads_layout="strided|swapped")),
    Cause("merge_no_transpose", "the heads are merged back without transposing (1, 2) first",
          "context.transpose(1, 2).contiguous().view(b, n, d_out)", sig(heads_layout="merge")),
    Cause("view_not_contiguous", "view is called on a transposed (non-contiguous) tensor",
          "call .contiguous() before .view(...), or use .reshape(...)"),
    Cause("no_out_proj", "out_proj is missing or skipped",
          "apply out_proj, an nn.Linear(d_out, d_out), to the merged context vectors last",
          sig(out_proj="missing|~ok")),
    Cause("out_proj_bias", "out_proj has no bias", "out_proj is nn.Linear(d_out, d_out): it always has a bias",
          sig(out_proj="bias")),
    Cause("out_proj_shape", "out_proj does not map d_out features to d_out",
          "out_proj is an nn.Linear(d_out, d_out): it acts on the merged heads", sig(out_proj="shape")),
    Cause("out_proj_per_head", "out_proj is applied to each head separately",
          "merge the heads first, then apply one nn.Linear(d_out, d_out) to the merged context vectors",
          sig(out_proj="per_head")),
    Cause("out_proj_activation", "the output projection is followed by an activation",
          "return what out_proj gives as it is: attention has no non-linearity after out_proj"),
    Cause("head_dim_wrong", "head_dim is not d_out // num_heads", "head_dim = d_out // num_heads"),
    Cause("shape_unpacked_swapped", "x.shape is unpacked with the batch and token axes swapped (the number of "
          "tokens taken from axis 0)", "x has shape (b, num_tokens, d_in): the batch axis comes first",
          sig(batch_order="swapped")),
    Cause("no_divisibility_check", "d_out is not checked to be divisible by num_heads",
          "assert d_out % num_heads == 0 (or raise ValueError) in __init__"),
)}


def observation(probe, outcome=None, matched=(), modelled=(), measured=None):
    """One observation as plain data: a probe and its outcome, or direct evidence. `measured`: the quantity the
    probe measured on the student's code, in words (said beside the property when it is wrong)."""
    if measured and probe in PROBES:
        return dict(observation(probe, outcome), measured=str(measured))
    if probe == "signature":
        return {"probe": probe, "matched": sorted(matched), "modelled": sorted(set(modelled) | set(matched))}
    if probe in ("cause", "crash"):
        if outcome not in CAUSES:
            raise KeyError(f"unknown cause {outcome!r}: add it to grader.check.causes.CAUSES")
        return {"probe": probe, "outcome": outcome}
    if probe not in PROBES or (outcome != "ok" and outcome not in PROBES[probe][1]):
        raise KeyError(f"unknown probe outcome {probe}={outcome}: add it to grader.check.causes.PROBES")
    return {"probe": probe, "outcome": outcome}


def weigh(observations):
    """(supported, contradicted): the causes some observation speaks for, and those some observation rules out."""
    supported, contradicted = set(), set()
    for seen in observations:
        probe = seen.get("probe")
        if probe == "signature":
            matched = set(seen.get("matched") or ())
            supported |= matched
            if matched:  # an output equal to one known fault's is not what the other modelled faults give
                contradicted |= set(seen.get("modelled") or ()) - matched
            continue
        if probe in ("cause", "crash"):
            supported.add(seen.get("outcome"))
            continue
        outcome = seen.get("outcome")
        for cause in CAUSES.values():
            expected = cause.signature.get(probe)
            if expected is None:
                continue
            if outcome in expected:
                if outcome != "ok":
                    supported.add(cause.key)
            elif "~" + str(outcome) not in expected:
                contradicted.add(cause.key)
    return supported & set(CAUSES), contradicted


def candidates(observations):
    """The known causes that match every observation and are supported by at least one."""
    supported, contradicted = weigh(observations)
    return supported - contradicted


def name_cause(observations):
    """The cause to name, or None: only when exactly one known fault matches every probe. A crash pattern, the
    weakest evidence, counts only when the other observations support no cause at all."""
    strong = [seen for seen in observations if seen.get("probe") != "crash"]
    found = candidates(strong)
    if not found:
        found = candidates(observations)
    return next(iter(found)) if len(found) == 1 else None


def measured_for(observations, key):
    """What the probes measured that speaks for cause `key` ("your scores are divided by 18; sqrt(d_k) is 3"),
    said before the cause is named, so that the student sees the number behind it; "" when none."""
    signature = CAUSES[key].signature if key in CAUSES else {}
    said = []
    for item in observations:
        text = item.get("measured")
        if text and item.get("probe") in signature and item.get("outcome") in signature[item["probe"]] and \
                text not in said:
            said.append(text)
    return "; ".join(said)


# Probes that read the attention weights (or dropout's pattern) out of a module's output, assuming each head's
# context sits in its place: where the heads' layout is seen scrambled, what they saw is the scramble's.
READ_THROUGH_THE_LAYOUT = frozenset({"rows", "renorm", "temperature", "pattern", "nan", "causality",
                                     "future_scores", "rate", "rescale", "layout", "target"})


def heads_scrambled(observations):
    """Whether the heads' layout probe saw the heads split or merged out of place."""
    return any(item.get("probe") == "heads_layout" and item.get("outcome") not in (None, "ok")
               for item in observations)


# Outcomes that rule causes out but are no finding to tell a student: a probe whose premise failed (a temperature
# read from weights that are no softmax of q·k: transposed scores, weights of another axis) says nothing of the
# property it measures ("the scale is not sqrt(d_k)" sent a blind reviewer's student to fix a right scale).
NO_FINDING = frozenset({("temperature", "unfit")})


def failed_properties(observations):
    """[(property, what was seen)] of the probes whose outcome was not right, in PROBES order, once each."""
    seen = {}
    scrambled = heads_scrambled(observations)
    for item in observations:
        probe, outcome = item.get("probe"), item.get("outcome")
        if (scrambled and probe in READ_THROUGH_THE_LAYOUT) or (probe, outcome) in NO_FINDING:
            continue
        if probe in PROBES and outcome and outcome != "ok" and probe not in seen:
            seen[probe] = PROBES[probe][1][outcome] + (f": {item['measured']}" if item.get("measured") else "")
    return [(PROBES[probe][0], seen[probe]) for probe in PROBES if probe in seen]


def right_properties(observations):
    """The properties whose probes found the right behaviour (said when no cause is named)."""
    right = {item.get("probe") for item in observations if item.get("outcome") == "ok"}
    wrong = {item.get("probe") for item in observations if item.get("outcome") not in (None, "ok")
             and item.get("probe") in PROBES}
    return [PROBES[probe][0] for probe in PROBES if probe in right - wrong]


# Crashes whose pattern has one meaning: the student's exception (type, message, failing line), as plain data.
SHAPE_CLASH = re.compile(r"must match the size of tensor|doesn't match the broadcast shape|"
                         r"Expected size for first two dimensions|shapes cannot be multiplied|size mismatch|"
                         r"cannot be broadcast|not broadcastable")
KEYS_TRANSPOSED = re.compile(r"\b(keys|k|key)\s*\.\s*(T\b|mT\b|transpose\s*\(|permute\s*\()")
# The axes of (b, heads, n, head_dim) keys: out of range there, the keys are not 4-D (the heads were split
# wrongly before this line), and the transpose itself is right: two meanings, so no cause.
HEADS_TRANSPOSE = re.compile(r"transpose\s*\(\s*(2\s*,\s*3|3\s*,\s*2)\s*\)")
WEIGHT_TRANSPOSED = re.compile(r"\bW_\w+\s*\.\s*(T\b|t\(\))")
LINEAR_WEIGHT = re.compile(r"@\s*(self\.)?W_\w+\.weight\b(?!\s*\.\s*(T\b|mT\b|t\(|transpose))")
WEIGHT_LEFT = re.compile(r"\bW_\w+(\.weight)?\s*@\s*x\b")
MASK_SLICED = re.compile(r"mask[^@=]*\[\s*:[^\]]*,\s*:")
MASK_RESHAPED = re.compile(r"mask[^@=]*\.\s*(unsqueeze|view|reshape|expand|T\b|transpose)|mask[^@=]*\[\s*None")
# `queries @ keys` with keys as they come from the projection: (n, d_k) @ (n, d_k) clashes unless n == d_k.
KEYS_UNTRANSPOSED = re.compile(r"\b(queries|q|query)\s*@\s*(keys|k|key)\b(?!\s*\.\s*(T\b|mT\b|t\(|transpose|permute))")
SAME_MATRICES = re.compile(r"shapes cannot be multiplied \((\d+)x(\d+) and \1x\2\)")
# A size of view()/reshape() that is a float (d_out / num_heads), and its position (1-based), in the words of
# torch 2.1 to 2.14 ("failed to unpack the object at pos 4 with error ... but got float", "must be tuple of ints,
# but found element of type float at pos 4").
FLOAT_SIZE = re.compile(r"(?:view|reshape)\(\): argument 'size'[^\n]*?(?:at pos (\d+)[^\n]*?\bfloat\b|\bfloat\b at pos "
                        r"(\d+))")
# `W_query.weight` of an nn.Linear, or `W_query` itself (SelfAttention_v1's raw matrices: kind None, a weight).
MISSING_PARAMETER = re.compile(r"^(?:heads\.\d+\.)?(W_query|W_key|W_value|out_proj)(?:\.(weight|bias))? is not an "
                               r"nn\.Parameter.*\(found (\w+)\)")
WRONG_SHAPE = re.compile(r"^(?:heads\.\d+\.)?(W_query|W_key|W_value|out_proj)\.weight has shape \((\d+), (\d+)\), "
                         r"expected \((\d+), (\d+)\)")


def injection_cause(message):
    """The mistake behind a parameter the judge could not set (the student's module lacks or misshapes it)."""
    found = MISSING_PARAMETER.search(message)
    if found:
        role, kind, what = found.groups()
        if role == "out_proj":
            return "out_proj_bias" if kind == "bias" and what == "NoneType" else "no_out_proj"
        if kind == "bias" and what == "NoneType":
            return "qkv_bias_ignored"
        return "weights_not_parameters" if what == "Tensor" else None
    found = WRONG_SHAPE.search(message)
    if found:
        role, rows, columns, want_rows, want_columns = found.groups()
        if role == "out_proj":
            return "out_proj_shape"
        return "weight_shape" if (rows, columns) == (want_columns, want_rows) else None
    return None


def call_arguments(code, name):
    """The top-level arguments of the first `.name(...)` call in a line of code, as text ([] if none)."""
    start = re.search(rf"\.\s*{name}\s*\(", code)
    if not start:
        return []
    arguments, depth, current = [], 0, ""
    for char in code[start.end():]:
        if char == ")" and depth == 0:
            return arguments + [current.strip()]
        if char == "," and depth == 0:
            arguments.append(current.strip())
            current = ""
            continue
        depth += char in "([{"
        depth -= char in ")]}"
        current += char
    return []


def float_size_is_head_dim(message, code):
    """Whether the float size that view() or reshape() refused is the line's head_dim (d_out / num_heads)."""
    found = FLOAT_SIZE.search(message)
    if not found:
        return False
    arguments = call_arguments(code, "view") or call_arguments(code, "reshape")
    position = int(found.group(1) or found.group(2)) - 1
    return 0 <= position < len(arguments) and re.fullmatch(r"(self\.)?head_dim", arguments[position]) is not None


def crash_cause(error):
    """The mistake behind a crash of the student's code (`error`: type, message and failing line), when the
    crash has one meaning; None otherwise."""
    kind, message, line = error.get("type") or "", error.get("message") or "", error.get("location") or ""
    code = line.split(": ", 1)[-1] if ": " in line else line
    if kind == "InjectionError":
        return injection_cause(message)
    if "view size is not compatible with input tensor's size and stride" in message:
        return "view_not_contiguous"
    if "masked_fill_ only supports boolean masks" in message or "masked_fill only supports boolean masks" in message:
        return "mask_not_bool"
    if re.search(r"attribute '\w*mask\w*' already exists", message):
        return "mask_not_buffer"
    if re.search(r"'float' object is not callable", message) and "dropout" in code:
        return "dropout_not_module"
    if re.search(r"__init__\(\) takes 1 positional argument but \d+ were given", message):
        return "init_not_defined"
    if re.search(r"shape '\[[\d, ]+\]' is invalid for input of size", message) and "head" in code:
        return "head_dim_wrong"
    if float_size_is_head_dim(message, code):
        return "head_dim_wrong"
    if KEYS_UNTRANSPOSED.search(code) and SAME_MATRICES.search(message):
        return "keys_not_transposed"  # queries and keys have the same (n, d_k) shape: the keys' transpose is missing
    if WEIGHT_LEFT.search(code) and SHAPE_CLASH.search(message):
        return "weight_left"
    if LINEAR_WEIGHT.search(code) and SHAPE_CLASH.search(message):
        return "linear_weight_matmul"  # (d_out, d_in) as stored: x @ weight clashes unless d_in == d_out
    if KEYS_TRANSPOSED.search(code) and SHAPE_CLASH.search(message):
        return "keys_transpose"
    if KEYS_TRANSPOSED.search(code) and "Dimension out of range" in message and not HEADS_TRANSPOSE.search(code):
        return "keys_transpose"  # axes past the keys' rank; but (2, 3) is right for split heads (see HEADS_TRANSPOSE)
    if SHAPE_CLASH.search(message):
        if WEIGHT_TRANSPOSED.search(code):
            return "weight_transposed"
        if re.search(r"\bmask\b", code):
            if not MASK_SLICED.search(code):
                return "mask_not_sliced"
            if MASK_RESHAPED.search(code):
                return "mask_shape"
    return None
