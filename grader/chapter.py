"""The chapter, described once: its steps in order, their points, names and colours.

Everything else reads this module: the tests' points (each test's weight shares
out its step's points, see `grader.check.suite`), the tables and CSV columns,
the feedback pages, the report's colours, the student checker's step list.
Adding a step or changing its points is an edit here, and nowhere else.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    key: str  # the step's id: test names start with it, `check.py <key>` selects it
    number: int
    title: str
    names: tuple[str, ...]  # the student-facing functions and classes this step defines, in the file's order
    points: float  # the step's share of the assignment's total
    colour: str  # the step's colour in the cohort report's charts


STEPS = (
    Step("projection", 1, "Query, key and value projections", ("init_qkv_weights", "project"), 10, "#4c72b0"),
    Step("scaling", 2, "Scaled dot-product attention",
         ("attention_scores", "scaled_attention_weights", "context_vectors", "dot_product_variance",
          "SelfAttention_v1", "SelfAttention_v2"), 15, "#dd8452"),
    Step("masking", 3, "Causal masking", ("causal_mask", "mask_and_renormalize", "causal_attention_weights"), 15,
         "#55a868"),
    Step("dropout", 4, "Dropout on the attention weights", ("attention_dropout",), 10, "#c44e52"),
    Step("causal_attention", 5, "The CausalAttention class", ("CausalAttention",), 20, "#8172b3"),
    Step("mha_wrapper", 6, "Stacking heads: MultiHeadAttentionWrapper", ("MultiHeadAttentionWrapper",), 10, "#937860"),
    Step("multihead_attention", 7, "Multi-head attention with weight splits", ("MultiHeadAttention",), 20, "#da8bc3"),
)

STEP_KEYS = tuple(step.key for step in STEPS)
BY_KEY = {step.key: step for step in STEPS}
TOTAL_POINTS = sum(step.points for step in STEPS)


def step_of_test_name(name: str) -> str:
    """Test names start with their step key and a colon: "masking: rows sum to one"."""
    key, sep, _ = name.partition(":")
    if not sep or key not in BY_KEY:
        raise ValueError(f"test name {name!r} must start with one of {', '.join(STEP_KEYS)} and a colon")
    return key


def step_of_name(name: str) -> Step | None:
    """The step that defines the student-facing function or class `name`, or None."""
    return next((step for step in STEPS if name in step.names), None)


def points_of(key: str, weight: float, step_weight: float) -> float:
    """A test's points: its weight's share of its step's points."""
    return BY_KEY[key].points * weight / step_weight if step_weight else 0.0
