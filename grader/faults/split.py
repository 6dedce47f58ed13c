"""The catalogue's held-out split: faults the diagnosis is measured on and never tuned on.

Drawn once, before any probe of the fault model was written, from the faults
new to the kit (`grader.faults.learners`, which nobody here had tuned against):
`random.Random(SEED).sample(sorted(ids), ceil(SHARE * len(BUGS)))` over the
79 learner faults of the time, for 146 faults in all. The draw is recorded
below and frozen: faults added later join the tuning split, so the held-out
set never moves (a kit test re-draws it from POOL and checks it).
"""

import math
import random

SEED = 13
SHARE = 0.30
CATALOGUE_SIZE = 146  # len(BUGS) when the split was drawn

# The learner faults as they stood at the draw (sorted ids): the population sampled.
POOL = (
    "causal_bias_always_on", "causal_divide_by_dk", "causal_dropout_float_not_module",
    "causal_dropout_mask_shared_across_batch", "causal_dropout_on_values", "causal_dropout_rate_hard_coded",
    "causal_dropout_replaces_softmax", "causal_fill_zero", "causal_functional_dropout_always_on",
    "causal_keys_permute_noop", "causal_linear_in_out_swapped", "causal_mask_after_softmax",
    "causal_mask_all_ones", "causal_mask_assigned_before_buffer", "causal_mask_leaks_next_token",
    "causal_mask_not_bool", "causal_mask_sliced_rows_only", "causal_mask_tril", "causal_mask_unsqueezed",
    "causal_not_scaled", "causal_scale_after_softmax", "causal_scaled_twice", "causal_scales_by_num_tokens",
    "causal_softmax_dim0", "causal_value_created_first", "causal_values_use_key_weight",
    "dropout_mask_shared_across_batch", "dropout_multiplied_by_p", "dropout_rescaled_twice",
    "masking_additive_mask_as_keep_mask", "masking_additive_mask_diagonal_zero", "masking_loop_mask_hides_past",
    "masking_mask_diagonal_2", "masking_renorm_column_sums", "mha_dropout_before_softmax",
    "mha_dropout_mask_shared_across_heads", "mha_dropout_result_unused", "mha_heads_flattened_with_view",
    "mha_heads_never_transposed", "mha_key_bias_always_on", "mha_mask_below_diagonal", "mha_mask_eq_zero",
    "mha_mask_hides_diagonal", "mha_multiply_by_one_over_head_dim", "mha_no_dropout", "mha_no_out_proj_module",
    "mha_not_scaled", "mha_out_proj_from_d_in", "mha_out_proj_per_head", "mha_out_proj_relu",
    "mha_scales_by_d_in", "mha_scales_by_keys_shape_1", "mha_scales_by_num_tokens", "mha_sdpa_dropout_in_eval",
    "mha_sdpa_mask_not_inverted", "mha_softmax_dim1", "mha_softmax_over_heads_and_keys",
    "mha_split_into_batch_of_heads", "projection_key_randn", "projection_keys_use_query_weight",
    "projection_values_use_key_weight", "projection_weight_on_the_left", "scaling_multiplied_by_sqrt_dk",
    "scaling_v1_key_created_first", "scaling_v1_no_projection", "scaling_v1_plain_tensors",
    "scaling_v1_scales_by_d_in", "scaling_v1_weights_d_out_by_d_in", "scaling_v2_bias_always_on",
    "scaling_v2_keys_transpose_1_2", "scaling_v2_linear_in_out_swapped", "scaling_v2_value_created_first",
    "wrapper_adds_out_proj", "wrapper_head_args_misordered", "wrapper_head_size_split", "wrapper_heads_chained",
    "wrapper_init_misspelled", "wrapper_seed_reset_per_head", "wrapper_stack_not_cat",
)

# The draw, written out: random.Random(13).sample(POOL, 44), sorted.
HELD_OUT = frozenset((
    "causal_divide_by_dk", "causal_dropout_mask_shared_across_batch", "causal_dropout_rate_hard_coded",
    "causal_fill_zero", "causal_functional_dropout_always_on", "causal_keys_permute_noop",
    "causal_mask_leaks_next_token", "causal_mask_sliced_rows_only", "causal_mask_tril", "causal_mask_unsqueezed",
    "causal_scale_after_softmax", "causal_scales_by_num_tokens", "causal_softmax_dim0", "dropout_multiplied_by_p",
    "dropout_rescaled_twice", "masking_additive_mask_as_keep_mask", "masking_loop_mask_hides_past",
    "masking_renorm_column_sums", "mha_dropout_mask_shared_across_heads", "mha_dropout_result_unused",
    "mha_heads_flattened_with_view", "mha_mask_hides_diagonal", "mha_out_proj_from_d_in", "mha_out_proj_per_head",
    "mha_scales_by_d_in", "mha_scales_by_keys_shape_1", "mha_scales_by_num_tokens", "mha_sdpa_dropout_in_eval",
    "mha_sdpa_mask_not_inverted", "mha_softmax_dim1", "mha_softmax_over_heads_and_keys",
    "mha_split_into_batch_of_heads", "projection_key_randn", "projection_weight_on_the_left",
    "scaling_v1_no_projection", "scaling_v1_plain_tensors", "scaling_v2_bias_always_on",
    "scaling_v2_keys_transpose_1_2", "scaling_v2_linear_in_out_swapped", "scaling_v2_value_created_first",
    "wrapper_adds_out_proj", "wrapper_head_args_misordered", "wrapper_init_misspelled", "wrapper_seed_reset_per_head",
))


def redraw() -> frozenset[str]:
    """The held-out ids as the recorded procedure draws them (a kit test compares with HELD_OUT)."""
    return frozenset(random.Random(SEED).sample(sorted(POOL), math.ceil(SHARE * CATALOGUE_SIZE)))


def split_of(bug_id: str) -> str:
    return "held-out" if bug_id in HELD_OUT else "tuning"
