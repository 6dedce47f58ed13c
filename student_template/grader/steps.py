"""The seven chapter steps, in the order a student meets them."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    key: str
    number: int
    title: str
    names: tuple  # the student-facing names this step defines


STEPS = (
    Step("projection", 1, "Query, key and value projections", ("init_qkv_weights", "project")),
    Step(
        "scaling",
        2,
        "Scaled dot-product attention",
        (
            "attention_scores",
            "scaled_attention_weights",
            "context_vectors",
            "dot_product_variance",
            "SelfAttention_v1",
            "SelfAttention_v2",
        ),
    ),
    Step("masking", 3, "Causal masking", ("causal_mask", "mask_and_renormalize", "causal_attention_weights")),
    Step("dropout", 4, "Dropout on the attention weights", ("attention_dropout",)),
    Step("causal_attention", 5, "The CausalAttention class", ("CausalAttention",)),
    Step("mha_wrapper", 6, "Stacking heads: MultiHeadAttentionWrapper", ("MultiHeadAttentionWrapper",)),
    Step("multihead_attention", 7, "Multi-head attention with weight splits", ("MultiHeadAttention",)),
)

STEP_KEYS = tuple(step.key for step in STEPS)
BY_KEY = {step.key: step for step in STEPS}


def step_of_test_name(name):
    """Test names start with their step key and a colon: "masking: rows sum to one"."""
    key, sep, _ = name.partition(":")
    if not sep or key not in BY_KEY:
        raise ValueError(f"test name {name!r} must start with one of {', '.join(STEP_KEYS)} and a colon")
    return key
