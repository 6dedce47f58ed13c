"""Three wrong causes a blind tester's third held-out set found (2026-11-27), each now a class of its own.

Heads split or merged in an order the chapter does not use: the attention weights the probes read through the
values are then the scramble's, so no mask, scale or dropout fault may be named from them. Heads merged with
permute(0, 2, 3, 1) were told "mask pattern" and, in a public check, that the output's shape was wrong (it was
right); heads split and merged by views alone (no transpose at either end) were told "softmax scale, mask
pattern, dropout rate".

A forward that keeps its slice of the mask (self.mask = self.mask[:n, :n]) was told to register a full-size
mask in __init__, which it did: only a fresh module tells the two apart.
"""

import pytest

from grader.check.causes import PROBES
from tests.kit.test_learners_heldout2 import lost_steps, named_causes

SPLIT = ".view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)"
MERGE = "(attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)"
SCRAMBLES = {
    # (b, heads, n, head_dim) -> (b, n, head_dim, heads): the right numbers in other places; no known cause
    "merged_with_permute": ((MERGE, "(attn_weights @ values).permute(0, 2, 3, 1).contiguous().view(b, num_tokens, "
                                    "self.d_out)"),),
    # view straight to the heads' layout, and back by a view: the split's cause
    "split_and_merged_by_views": ((SPLIT, ".view(b, self.num_heads, num_tokens, self.head_dim)"),
                                  (MERGE, "(attn_weights @ values).contiguous().view(b, num_tokens, self.d_out)")),
}
EXPECTED_CAUSES = {"merged_with_permute": set(), "split_and_merged_by_views": {"split_no_transpose"}}
MISREAD = [PROBES[probe][0] for probe in ("rows", "temperature", "pattern", "rate", "rescale")]


@pytest.mark.slow(reason="grades two submissions through the sandboxed judge")
@pytest.mark.parametrize("name", sorted(SCRAMBLES))
def test_scrambled_heads_cost_their_step_and_are_never_read_as_a_mask_or_scale_fault(name, clean, grade, maxima):
    source = clean
    for old, new in SCRAMBLES[name]:
        assert old in source, f"the solution no longer has {old!r}: update this test"
        source = source.replace(old, new)
    result = grade(source)
    assert lost_steps(result, maxima) == {"multihead_attention"}
    assert named_causes(result) == EXPECTED_CAUSES[name]
    for test in result.tests:
        if test.score < test.max_score:
            _, _, told = (test.output or "").partition("what is wrong:")  # "" where the check names nothing
            assert not [title for title in MISREAD if f"{title} (" in told], (test.name, test.output)
            assert "does not have the shape" not in (test.output or ""), (test.name, test.output)
            assert (test.output or "").count("(right: ") <= 1, (test.name, test.output)  # said once


SLICE = "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
KEEPS_ITS_SLICE = ("        self.mask = self.mask[:num_tokens, :num_tokens]\n"
                   "        attn_scores.masked_fill_(self.mask.bool(), -torch.inf)\n")


@pytest.mark.slow(reason="grades a submission through the sandboxed judge")
def test_a_forward_that_keeps_its_slice_of_the_mask_is_told_so_not_to_register_a_bigger_mask(clean, grade, maxima):
    assert clean.count(SLICE) == 2, "the solution's masking line changed: update this test"
    source = clean.replace(SLICE, KEEPS_ITS_SLICE, 1)  # CausalAttention's (MultiHeadAttention's comes second)
    result = grade(source)
    assert lost_steps(result, maxima) == {"causal_attention"}
    assert named_causes(result) == {"mask_overwritten"}
