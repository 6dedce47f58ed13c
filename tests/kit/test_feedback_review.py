"""What a blind reviewer's student was told (2026-11-28), for the mistakes where the feedback was wrong, empty or
silent: each is graded here as its class of mistake, grafted onto the solution.

* `keys @ queries.T` in SelfAttention_v1: the public check said "softmax scale (the scale is not sqrt(d_k))", a
  right scale sent to be fixed. A temperature read from weights that are no softmax of q·k is no finding.
* `F.dropout(w, p)` without training=: five properties (rows, mask, causality, future scores, batch independence)
  were listed as wrong, all of them right; eval-mode randomness is now told, and only it.
* forward returning the attention weights: shapes on nine checks and no cause.
* a softmax written as exp / sum without the row max (the chapter's naive softmax): full marks. Large scores now
  overflow it to NaN in the weights checks of scaling and masking, and the cause is named. The same softmax inside
  CausalAttention's or MultiHeadAttention's forward (as the kit's own review found next) now overflows there too,
  on inputs about 40 times the usual.
* heads viewed straight to (b, heads, n, head_dim): beside the right cause, the weights check showed "token 0
  attends to the future token 2", an entry of weights read through a scrambled layout (a later session's fix).
* `bias=False` whatever qkv_bias: a hidden check said the student's code "raised an error" where the grader's own
  setting of the bias failed.
"""

import contextlib

import pytest

from grader.check.causes import CAUSES

KEYS_FIRST = ("        values = x @ self.W_value\n        attn_scores = queries @ keys.T\n",  # v1's (v2 has the same line)
              "        values = x @ self.W_value\n        attn_scores = keys @ queries.T\n")
DROPOUT_ALWAYS = ("        attn_weights = self.dropout(attn_weights)\n        return attn_weights @ values\n",
                  "        attn_weights = torch.nn.functional.dropout(attn_weights, p=self.dropout.p)\n"
                  "        return attn_weights @ values\n")
RETURNS_WEIGHTS = ("        attn_weights = self.dropout(attn_weights)\n        return attn_weights @ values\n",
                   "        attn_weights = self.dropout(attn_weights)\n        return attn_weights\n")
NAIVE_SCALED = ("    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
                "    weights = torch.exp(scores / d_k**0.5)\n    return weights / weights.sum(dim=-1, keepdim=True)\n")
NAIVE_CAUSAL = ("    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
                "    weights = torch.exp(masked / d_k**0.5)\n    return weights / weights.sum(dim=-1, keepdim=True)\n")
BIAS_IGNORED = (("        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.dropout = nn.Dropout(dropout)\n"
                 "        self.register_buffer(\n"),
                ("        self.W_query = nn.Linear(d_in, d_out, bias=False)\n"
                 "        self.W_key = nn.Linear(d_in, d_out, bias=False)\n"
                 "        self.W_value = nn.Linear(d_in, d_out, bias=False)\n        self.dropout = nn.Dropout(dropout)\n"
                 "        self.register_buffer(\n"))
MASKED = "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
SOFTMAX = "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
NAIVE = ("        attn_weights = torch.exp(attn_scores / keys.shape[-1] ** 0.5)\n"
         "        attn_weights = attn_weights / attn_weights.sum(dim=-1, keepdim=True)\n")
NAIVE_MODULE = ("        attn_scores = queries @ keys.transpose(1, 2)\n" + MASKED + SOFTMAX,
                "        attn_scores = queries @ keys.transpose(1, 2)\n" + MASKED + NAIVE)
NAIVE_HEADS = ("        attn_scores = queries @ keys.transpose(2, 3)\n" + MASKED + SOFTMAX,
               "        attn_scores = queries @ keys.transpose(2, 3)\n" + MASKED + NAIVE)
SPLIT = ".view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
VIEW_HEADS_FIRST = ".view(b, self.num_heads, num_tokens, self.head_dim)\n"
PROJECTIONS = ("        queries = self.W_query(x)", "        keys = self.W_key(x)", "        values = self.W_value(x)")
HEADS_FIRST = ("".join(line + SPLIT for line in PROJECTIONS), "".join(line + VIEW_HEADS_FIRST for line in PROJECTIONS))
# The chapter's other way to causal weights, softmax first, then the future zeroed and each row renormalised: right,
# and finite however large the scores, as long as no future score outweighs every visible one (a blind student's
# correct file lost 3 points to the overflow check, told "exp / sum without the row max").
RENORM = ("    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
          "    return mask_and_renormalize(torch.softmax(scores / d_k**0.5, dim=-1))\n")
RENORM_MODULES = (MASKED + SOFTMAX, SOFTMAX + "        attn_weights = attn_weights * ~self.mask.bool()[:num_tokens, "
                  ":num_tokens]\n        attn_weights = attn_weights / attn_weights.sum(dim=-1, keepdim=True)\n")
FLOAT_MASK = ("    ones = torch.ones(context_length, context_length, dtype=torch.bool)\n",
              "    ones = torch.ones(context_length, context_length)\n")
# A blind student's head splits with head_dim and num_heads in the wrong order: "swapped" (a view to (b, n, head_dim,
# num_heads), then transpose(1, 2): head_dim heads of num_heads features) and "strided" (then permute: each head
# every num_heads-th feature, merged back alike). Equal attention cannot tell them from the chapter's cut: the
# weights were misread ("rows do not sum to one"), and the strided one was told "one dropout mask is shared by
# every head".
HEADS_LAST = ".view(b, num_tokens, self.head_dim, self.num_heads)"
SWAPPED = ("".join(line + SPLIT for line in PROJECTIONS),
           "".join(line + HEADS_LAST + ".transpose(1, 2)\n" for line in PROJECTIONS))
STRIDED = (("".join(line + SPLIT for line in PROJECTIONS),
            "".join(line + HEADS_LAST + ".permute(0, 3, 1, 2)\n" for line in PROJECTIONS)),
           ("        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n",
            "        context = (attn_weights @ values).permute(0, 2, 3, 1).reshape(b, num_tokens, self.d_out)\n"))
# self.dropout a float and F.dropout without training= (a blind student's): "dropout rescaling (they are not
# rescaled)" was said, measured against weights that eval mode had dropped too.
FLOAT_DROPOUT = (("        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.dropout = nn.Dropout(dropout)\n",
                  "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.dropout = dropout\n"),
                 (DROPOUT_ALWAYS[0], "        attn_weights = torch.nn.functional.dropout(attn_weights, self.dropout)\n"
                  "        return attn_weights @ values\n"))
# A blind student's correct file (2026-11-28, round 2): a dataclass under `from __future__ import annotations` lost
# causal_attention's 20 points. Its string annotations are resolved through sys.modules, where the loader had not put
# the module; the class was skipped with "'NoneType' object has no attribute '__dict__'".
FUTURE_DATACLASS = (("import math\n", "from __future__ import annotations\n\nimport math\nfrom dataclasses import dataclass\n"),
                    ("class CausalAttention(nn.Module):\n",
                     "@dataclass\nclass HeadShape:\n    d_in: int\n    d_out: int\n\n\nclass CausalAttention(nn.Module):\n"),
                    ("        self.d_out = d_out\n        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
                     "        shape = HeadShape(d_in, d_out)\n        self.d_out = shape.d_out\n"
                     "        self.W_query = nn.Linear(shape.d_in, shape.d_out, bias=qkv_bias)\n"))
# SelfAttention_v1 keeping plain tensors (a blind student's b10): the hidden draws check said "W_query should be a
# torch.Tensor, but your code returned NoneType" of a matrix that is a tensor, and that nothing returned.
V1_PLAIN = ("        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"
            "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
            "        self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n",
            "        self.W_query = torch.rand(d_in, d_out)\n        self.W_key = torch.rand(d_in, d_out)\n"
            "        self.W_value = torch.rand(d_in, d_out)\n")
# A blind cohort's rare bug (2026-11-28): `+ 1e-3` in mask_and_renormalize's denominator was told "the rows are not
# renormalised after the future is zeroed", a wrong cause (they are, a little short), and the integrity page then
# discounted it as a known mistake. A missing renormalisation leaves the last row (no future) summing to one.
EPSILON_RENORM = ("    return masked / masked.sum(dim=-1, keepdim=True)\n",
                  "    return masked / (masked.sum(dim=-1, keepdim=True) + 1e-3)\n")
# A mask built in forward on the default device (a blind TA's b47): right on the CPU, broken on a GPU, so it kept
# every point where a class is graded on the CPU. The same mask on the input's device is right everywhere.
CPU_MASK = ("        attn_scores = queries @ keys.transpose(1, 2)\n" + MASKED,
            "        attn_scores = queries @ keys.transpose(1, 2)\n        attn_scores.masked_fill_(torch.triu(torch.ones("
            "num_tokens, num_tokens), diagonal=1).bool(), -torch.inf)\n")
INPUT_DEVICE_MASK = (CPU_MASK[0], CPU_MASK[1].replace("num_tokens, num_tokens)", "num_tokens, num_tokens, device=x.device)"))
CASES = {"keys_first": KEYS_FIRST, "dropout_always": DROPOUT_ALWAYS, "returns_weights": RETURNS_WEIGHTS,
         "naive_scaled": NAIVE_SCALED, "naive_causal": NAIVE_CAUSAL, "bias_ignored": BIAS_IGNORED,
         "naive_module": NAIVE_MODULE, "naive_heads": NAIVE_HEADS, "heads_first": HEADS_FIRST,
         "renorm": RENORM, "float_mask": FLOAT_MASK,
         "swapped": SWAPPED, "strided": STRIDED, "float_dropout": FLOAT_DROPOUT, "future_dataclass": FUTURE_DATACLASS,
         "v1_plain": V1_PLAIN, "epsilon_renorm": EPSILON_RENORM, "cpu_mask": CPU_MASK,
         "input_device_mask": INPUT_DEVICE_MASK}


@pytest.fixture(scope="module")
def told(grade_many, clean):
    sources = {}
    for name, edits in CASES.items():
        source = clean
        for find, replace in edits if isinstance(edits[0], tuple) else [edits]:
            assert source.count(find) == 1, name  # the edit lands in the one place it is meant for
            source = source.replace(find, replace)
        sources[name] = source
    assert clean.count(RENORM_MODULES[0]) == 2  # CausalAttention's and MultiHeadAttention's
    sources["renorm_modules"] = clean.replace(*RENORM_MODULES)
    return grade_many(sources)


def failing(result, step):
    return [test for test in result.tests if test.step == step and test.score < test.max_score]


def test_a_transposed_score_matrix_is_not_told_a_wrong_scale(told):
    said = " ".join(test.output for test in failing(told["keys_first"], "scaling"))
    assert said and "softmax scale" not in said and "the scale is not sqrt(d_k)" not in said, said
    assert CAUSES["scores_kq"].title in said


def test_dropout_active_in_eval_is_told_alone(told):
    tests = failing(told["dropout_always"], "causal_attention")
    assert tests and all(CAUSES["dropout_in_eval"].title in test.output for test in tests), [t.output for t in tests]
    said = " ".join(test.output for test in tests)
    assert "what is wrong" not in said and "causality" not in said and "batch independence" not in said


def test_a_forward_that_returns_the_weights_is_told_so(told):
    tests = failing(told["returns_weights"], "causal_attention")
    assert tests and all(CAUSES["returns_weights"].title in test.output for test in tests)


@pytest.mark.parametrize("name,step", [("naive_scaled", "scaling"), ("naive_causal", "masking"),
                                       ("naive_module", "causal_attention"), ("naive_heads", "multihead_attention")])
def test_a_softmax_that_overflows_loses_its_weights_check_and_is_named(told, maxima, name, step):
    steps = told[name].step_scores()
    assert steps[step] < maxima[step] and all(steps[key] == maxima[key] for key in maxima if key != step), steps
    assert any(CAUSES["softmax_overflow"].title in test.output for test in failing(told[name], step))


def test_a_bias_the_grader_cannot_set_is_not_the_students_error(told):
    said = " ".join(test.output for test in failing(told["bias_ignored"], "causal_attention"))
    assert "raised" not in said and CAUSES["qkv_bias_ignored"].title in said, said


def test_weights_read_through_scrambled_heads_are_not_shown_as_evidence(told):
    """Heads viewed straight to (b, heads, n, head_dim): the weights read through one-hot values are the scramble's,
    so no "token 0 attends to the future token 2" beside the right cause."""
    said = [test.output for test in failing(told["heads_first"], "multihead_attention")
            if "hide the future" in test.name]
    assert said and all("attends to the future" not in text and "sums to" not in text for text in said), said
    assert all(CAUSES["split_no_transpose"].title in text for text in said), said


@pytest.mark.parametrize("name", ["renorm", "renorm_modules", "future_dataclass", "input_device_mask"])
def test_softmax_then_renormalising_keeps_full_marks_on_large_scores(told, maxima, name):
    assert told[name].step_scores() == maxima, [(test.name, test.output) for test in told[name].tests
                                                if test.score < test.max_score]


def test_a_float_mask_is_told_its_own_dtype(told):
    """A blind student: "causal_mask should return a bool tensor, yours is torch.float64" for a float32 mask (the
    dtype of the judge's float64 copy)."""
    said = [test.output for test in told["float_mask"].tests if "bool" in test.output and "causal_mask" in test.output]
    assert said and all("torch.float32" in text and "float64" not in text for text in said), said


@pytest.mark.parametrize("name", ["swapped", "strided"])
def test_a_head_split_with_head_dim_and_num_heads_in_the_wrong_order_is_named(told, maxima, name):
    steps = told[name].step_scores()
    assert steps["multihead_attention"] < maxima["multihead_attention"]
    said = [test.output for test in failing(told[name], "multihead_attention")]
    assert any(CAUSES["heads_view_order"].title in text for text in said), said
    assert CAUSES["dropout_shared_across_heads"].title not in " ".join(said), said
    assert not [text for text in said if "sum to one along each row" in text or "row sums" in text], said


def test_dropout_that_drops_in_eval_is_not_also_told_unrescaled(told):
    said = " ".join(test.output for test in failing(told["float_dropout"], "causal_attention"))
    assert "dropout is active when not training" in said and "not rescaled" not in said, said


def test_plain_tensors_in_selfattention_v1_are_told_so_not_returned_none(told):
    tests = [test for test in failing(told["v1_plain"], "scaling") if "in that order with torch.rand" in test.name]
    assert tests and "plain tensor" in tests[0].output and "NoneType" not in tests[0].output, tests
    assert tests[0].details.get("cause") == "weights_not_parameters", tests[0].details


def test_rows_a_little_short_are_not_told_unrenormalised(told):
    tests = failing(told["epsilon_renorm"], "masking")
    assert tests, "the rows sum to 0.99..., not one: a check must fail"
    assert all(test.details.get("cause") != "not_renormalised" for test in tests), [t.details for t in tests]
    assert CAUSES["not_renormalised"].title not in " ".join(test.output for test in tests)


def test_a_mask_made_on_the_cpu_in_forward_is_caught_on_the_cpu(told, maxima):
    steps = told["cpu_mask"].step_scores()
    assert steps["causal_attention"] < maxima["causal_attention"], steps
    assert all(steps[key] == maxima[key] for key in maxima if key != "causal_attention"), steps
    said = " ".join(test.output for test in failing(told["cpu_mask"], "causal_attention"))
    assert "makes a tensor on the CPU" in said and "device=x.device" in said, said


def test_a_hidden_check_does_not_say_where_a_nan_sits_in_an_answer_of_its_own_shape():
    """Red team 8: a hidden check said "contains NaN (first at [0, 0, 373858])" of an answer whose shape the
    submission chose, about 20 bits of the hidden inputs a check. Where the check set the shape, or in a public
    check, the place is still shown."""
    import torch

    from grader.check.testing import expect_tensor, hidden_check

    answer = torch.zeros(1, 1, 400000)
    answer[0, 0, 373858] = float("nan")
    said = {}
    for hidden in (False, True):
        with contextlib.ExitStack() as stack:
            if hidden:
                stack.enter_context(hidden_check())
            try:
                expect_tensor(answer, "context vectors")
            except AssertionError as error:
                said[hidden, None] = str(error)
            try:
                expect_tensor(answer, "context vectors", shape=(1, 1, 400000))
            except AssertionError as error:
                said[hidden, "shape"] = str(error)
    assert "373858" in said[False, None] and "373858" in said[True, "shape"]
    assert "NaN" in said[True, None] and "373858" not in said[True, None], said
