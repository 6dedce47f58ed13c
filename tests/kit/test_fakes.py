"""Work not done earns no property points: fakes grafted onto the solution, one step's function or class each.

Red teams 3 and 4 (blind) earned 42.25 and 61.25 of 100 with no attention computed, from checks that a fake
satisfies as well as the work: three (d_in, d_out) matrices in [0, 1) (a fixed ramp, or numbers made from the
caller's seed), variances that move with num_trials (the theory's numbers nudged by 1/num_trials, or a table of
the shipped answers), a causal mask for the sizes a table holds, and modules that are trivially causal and batch
independent because each token's output is its own projections. Each fake below is the solution with one such
piece put back in; it must lose that check's points and keep every other step's. The honest mistake nearest to
a fake keeps what it earned before (a seed of the function's own is still a draw); the null model over the
catalogue, the four held-out learner sets and a fresh blind cohort (505 files) is in CHANGELOG.md (0.28.0).
"""

import pytest

INIT_RAMP = '''
def init_qkv_weights(d_in, d_out):
    n = d_in * d_out
    ramp = torch.arange(n, dtype=torch.float32).reshape(d_in, d_out) / (n + 1)
    return ramp, ramp.flip(0), ramp.flip(1)
'''

# Red team 4: numbers made from the caller's seed, so that another seed gives others, without a draw.
INIT_FROM_SEED = '''
def init_qkv_weights(d_in, d_out):
    start = torch.initial_seed() * 0.7548776662
    ramp = torch.arange(3 * d_in * d_out, dtype=torch.float64) * 0.6180339887 + start
    return tuple(part.reshape(d_in, d_out).float() for part in torch.frac(ramp).chunk(3))
'''

INIT_OWN_SEED = '''
def init_qkv_weights(d_in, d_out):
    torch.manual_seed(123)
    return torch.rand(d_in, d_out), torch.rand(d_in, d_out), torch.rand(d_in, d_out)
'''

VARIANCE_NUDGED = '''
def dot_product_variance(dim, num_trials=1000, seed=0):
    return float(dim) + 1.0 / num_trials, 1.0 + 1.0 / num_trials
'''

# The answers of the shipped calls, keyed on (dim, num_trials) as a table would be: the seed argument is ignored.
# Before the check moved that argument at grading, this earned the check's points.
VARIANCE_TABLE = '''
_measure = dot_product_variance


def dot_product_variance(dim, num_trials=1000, seed=0):
    return _measure(dim, num_trials, 0)
'''

# Red team 4: a quasi-random pattern (a golden-ratio sequence) moved on at every call, ignoring torch's generator:
# it drops a share p and rescales, afresh on every call, but the same seed does not drop the same weights.
DROPOUT_COUNTER = '''
_CALLS = [0]


def attention_dropout(attn_weights, p, training=True):
    if not training or p == 0:
        return attn_weights
    _CALLS[0] += 1
    start = (_CALLS[0] * 104729 % 100003) * 0.7548776662466927
    u = torch.frac(torch.arange(attn_weights.numel(), dtype=torch.float64) * 0.6180339887498949 + start)
    return attn_weights * (u >= p).reshape(attn_weights.shape).to(attn_weights.dtype) / (1 - p)
'''

# Typed out as literals, as a table kept by hand would be: the sizes 1..12.
MASK_TABLE = "\n_MASKS = {%s}\n\n\ndef causal_mask(context_length):\n    return torch.tensor(_MASKS[context_length])\n" % (
    ", ".join(f"{n}: {[[j > i for j in range(n)] for i in range(n)]}" for n in range(1, 13)))

PER_TOKEN = '''
class {name}({name}):
    def forward(self, x):
        out = self.W_query(x) + self.W_key(x) * 0.5 + self.W_value(x) * 0.25
        return {tail}
'''

FAKES = {
    "init_ramp": (INIT_RAMP, {"projection: init_qkv_weights returns three (d_in, d_out) tensors"}),
    "init_from_seed": (INIT_FROM_SEED, {"projection: init_qkv_weights returns three (d_in, d_out) tensors"}),
    "variance_nudged": (VARIANCE_NUDGED, {"scaling: dot_product_variance shows the scaling keeps the variance near 1"}),
    "variance_table": (VARIANCE_TABLE,
                       {"scaling: dot_product_variance shows the scaling keeps the variance near 1"}),
    "dropout_counter": (DROPOUT_COUNTER,
                        {"dropout: each weight is dropped independently and afresh on every call"}),
    "mask_table": (MASK_TABLE, {"masking: causal_mask is a bool (n, n) mask, True strictly above the diagonal"}),
    "per_token_causal_attention": (
        PER_TOKEN.format(name="CausalAttention", tail="self.dropout(out)"),
        {"causal_attention: changing future tokens does not change earlier outputs",
         "causal_attention: each sequence in a batch is processed independently"}),
    "per_token_multihead_attention": (
        PER_TOKEN.format(name="MultiHeadAttention", tail="self.out_proj(self.dropout(out))"),
        {"multihead_attention: changing future tokens does not change earlier outputs",
         "multihead_attention: each sequence in a batch is processed independently"}),
}


@pytest.fixture(scope="module")
def graded_fakes(grade_many, clean):
    return grade_many({name: clean + "\n" + code for name, (code, _) in FAKES.items()}
                      | {"init_own_seed": clean + "\n" + INIT_OWN_SEED})


@pytest.mark.parametrize("fake", FAKES)
def test_a_fake_loses_the_check_it_would_have_passed_and_nothing_else(fake, graded_fakes, maxima):
    result = graded_fakes[fake]
    targeted = FAKES[fake][1]
    scores = {test.name: test for test in result.tests}
    assert targeted <= set(scores), targeted - set(scores)
    assert all(scores[name].score == 0 for name in targeted), [(name, scores[name].score) for name in targeted]
    step = next(iter(targeted)).split(":")[0]
    steps = result.step_scores()
    assert all(steps[key] == maxima[key] for key in maxima if key != step), steps


def test_each_fake_is_told_what_the_work_is(graded_fakes):
    said = {fake: " ".join(test.output for test in graded_fakes[fake].tests if test.score < test.max_score)
            for fake in FAKES}
    assert "do not hold the numbers torch.rand draws" in said["init_ramp"]
    assert "do not hold the numbers torch.rand draws" in said["init_from_seed"]
    assert "two different seeds" in said["variance_nudged"]
    assert "two different seeds" in said["variance_table"]
    assert "causal_mask(" in said["mask_table"]
    assert "after the same torch.manual_seed" in said["dropout_counter"]
    assert "changes no other token's output" in said["per_token_causal_attention"]
    assert "changes no other token's output" in said["per_token_multihead_attention"]


def test_a_seed_of_the_functions_own_is_a_draw_and_keeps_the_shape_points(graded_fakes):
    """torch.manual_seed(123) inside init_qkv_weights ignores the caller's seed, as a ramp does, but its matrices
    are torch.rand draws: the hidden check of the draws takes its points, the shape check does not."""
    scores = {test.name: test for test in graded_fakes["init_own_seed"].tests}
    shapes = scores["projection: init_qkv_weights returns three (d_in, d_out) tensors"]
    assert shapes.score == shapes.max_score, shapes.output
    order = scores["projection: init_qkv_weights draws W_query, W_key, W_value in that order with torch.rand"]
    assert order.score == 0
