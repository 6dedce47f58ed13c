"""The catalogue of known student mistakes: each one find/replace on the clean solution, confined to one step.

Each fault names the cause the feedback should give for it (`diagnosis`, a key of
grader.check.causes.CAUSES) and where learners make it (`source`); `make
diagnose-report` measures how often the feedback names it. Two parts: the kit's
first catalogue (below) and the mistakes from learners' public code
(grader.faults.learners). The held-out split is grader.faults.split.
"""
from grader.faults.learners import DEVELOPMENT_BUGS, LEARNER_BUGS
from grader.faults.mutation import Bug

KIT = "the kit's own catalogue (written from the chapter)"

# The faults the kit had before the learner catalogue (grader.faults.learners), with the public record
# of each where the research notes found one.
KIT_BUGS = [
    # ------------------------------------------------------------------ projection
    Bug(
        id="projection_key_drawn_first",
        source='https://github.com/neetcode-gh/leetcode/issues/5169',
        learner='init_order_key_first',
        diagnosis="qkv_order",
        step="projection",
        cause="W_key drawn before W_query, so the seeded draws land in the wrong matrices",
        find=(
            "    W_query = torch.rand(d_in, d_out)\n"
            "    W_key = torch.rand(d_in, d_out)\n"
        ),
        replace=(
            "    W_key = torch.rand(d_in, d_out)\n"
            "    W_query = torch.rand(d_in, d_out)\n"
        ),
    ),
    Bug(
        id="projection_returns_key_first",
        source='derived from https://github.com/neetcode-gh/leetcode/issues/5169',
        learner='init_order_key_first',
        diagnosis="qkv_order",
        step="projection",
        cause="weights returned as (W_key, W_query, W_value) instead of (W_query, W_key, W_value)",
        find="    return W_query, W_key, W_value\n",
        replace="    return W_key, W_query, W_value\n",
    ),
    Bug(
        id="projection_randn",
        source='https://github.com/vikramkalta/poc_chatbot/blob/HEAD/self_attention.py',
        learner='randn_instead_of_rand',
        diagnosis="randn_init",
        step="projection",
        cause="weights drawn with torch.randn instead of torch.rand",
        find=(
            "    W_query = torch.rand(d_in, d_out)\n"
            "    W_key = torch.rand(d_in, d_out)\n"
            "    W_value = torch.rand(d_in, d_out)\n"
        ),
        replace=(
            "    W_query = torch.randn(d_in, d_out)\n"
            "    W_key = torch.randn(d_in, d_out)\n"
            "    W_value = torch.randn(d_in, d_out)\n"
        ),
    ),
    Bug(
        id="projection_weights_transposed_shape",
        source='https://github.com/rasbt/LLMs-from-scratch/issues/857',
        learner='weight_stored_d_out_by_d_in',
        diagnosis="weight_shape",
        step="projection",
        cause="weight matrices drawn with shape (d_out, d_in) instead of (d_in, d_out)",
        find=(
            "    W_query = torch.rand(d_in, d_out)\n"
            "    W_key = torch.rand(d_in, d_out)\n"
            "    W_value = torch.rand(d_in, d_out)\n"
        ),
        replace=(
            "    W_query = torch.rand(d_out, d_in)\n"
            "    W_key = torch.rand(d_out, d_in)\n"
            "    W_value = torch.rand(d_out, d_in)\n"
        ),
    ),
    Bug(
        id="projection_keys_queries_swapped",
        source=KIT,
        diagnosis="qk_swapped",
        step="projection",
        cause="project returns (keys, queries, values): queries and keys swapped",
        find="    return x @ W_query, x @ W_key, x @ W_value\n",
        replace="    return x @ W_key, x @ W_query, x @ W_value\n",
    ),
    Bug(
        id="projection_uses_weight_transpose",
        source='https://github.com/skyzh/tiny-llm/pull/60',
        learner='linear_weight_not_transposed',
        diagnosis="weight_transposed",
        step="projection",
        cause="projects with W.T (the nn.Linear convention) instead of W",
        find="    return x @ W_query, x @ W_key, x @ W_value\n",
        replace="    return x @ W_query.T, x @ W_key.T, x @ W_value.T\n",
    ),
    # ------------------------------------------------------------------ scaling
    Bug(
        id="scaling_scores_keys_times_queries",
        source=KIT,
        diagnosis="scores_kq",
        step="scaling",
        cause="scores computed as keys @ queries.T, i.e. the transpose of the score matrix",
        find="    return queries @ keys.transpose(-2, -1)\n",
        replace="    return keys @ queries.transpose(-2, -1)\n",
    ),
    Bug(
        id="scaling_softmax_dim0",
        source='https://github.com/PetrochukM/PyTorch-NLP/issues/2',
        learner='softmax_dim0_batch',
        diagnosis="softmax_dim",
        step="scaling",
        cause="softmax over dim=0 instead of the last axis",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores / d_k**0.5, dim=0)\n",
    ),
    Bug(
        id="scaling_softmax_dim_minus2",
        source='https://github.com/datawhalechina/llms-from-scratch-cn/issues/54',
        learner='softmax_dim1_translation',
        diagnosis="softmax_dim",
        step="scaling",
        cause="softmax over the query axis (dim=-2): columns sum to one, not rows",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores / d_k**0.5, dim=-2)\n",
    ),
    Bug(
        id="scaling_not_scaled",
        source='https://github.com/PAIR-code/tiny-transformers/issues/71',
        learner='no_scaling',
        diagnosis="no_scale",
        step="scaling",
        cause="no scaling: softmax of the raw scores",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores, dim=-1)\n",
    ),
    Bug(
        id="scaling_divide_by_dk",
        source='https://github.com/delzac/cntkx/issues/10',
        learner='missing_sqrt',
        diagnosis="scale_dk",
        step="scaling",
        cause="scores divided by d_k instead of sqrt(d_k)",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores / d_k, dim=-1)\n",
    ),
    Bug(
        id="scaling_scale_after_softmax",
        source='derived from https://github.com/bytedance/lightseq/issues/91',
        learner='scale_after_softmax',
        diagnosis="scale_after",
        step="scaling",
        cause="divides by sqrt(d_k) after the softmax, so rows no longer sum to one",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores, dim=-1) / d_k**0.5\n",
    ),
    Bug(
        id="scaling_context_weights_transposed",
        source=KIT,
        diagnosis="context_transposed",
        step="scaling",
        cause="context vectors from the transposed attention weights",
        find=(
            '    """Each context vector is the attention-weighted sum of the value vectors."""\n'
            "    return attn_weights @ values\n"
        ),
        replace=(
            '    """Each context vector is the attention-weighted sum of the value vectors."""\n'
            "    return attn_weights.transpose(-2, -1) @ values\n"
        ),
    ),
    Bug(
        id="scaling_variance_divide_by_dim",
        source=KIT,
        diagnosis="variance_over_dim",
        step="scaling",
        cause="variance after: q·k divided by dim instead of sqrt(dim)",
        find="    variance_after = (dots / math.sqrt(dim)).var(unbiased=False).item()\n",
        replace="    variance_after = (dots / dim).var(unbiased=False).item()\n",
    ),
    Bug(
        id="scaling_variance_after_divided_by_sqrt",
        source=KIT,
        diagnosis="variance_not_recomputed",
        step="scaling",
        cause="variance after computed as variance_before / sqrt(dim) instead of the variance of q·k / sqrt(dim)",
        find="    variance_after = (dots / math.sqrt(dim)).var(unbiased=False).item()\n",
        replace="    variance_after = variance_before / math.sqrt(dim)\n",
    ),
    Bug(
        id="scaling_variance_uniform",
        source=KIT,
        diagnosis="variance_uniform",
        step="scaling",
        cause="q and k drawn with torch.rand (uniform) instead of standard-normal torch.randn",
        find=(
            "    q = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)\n"
            "    k = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)\n"
        ),
        replace=(
            "    q = torch.rand(num_trials, dim, generator=generator, dtype=torch.float64)\n"
            "    k = torch.rand(num_trials, dim, generator=generator, dtype=torch.float64)\n"
        ),
    ),
    Bug(
        id="scaling_v1_randn",
        source='https://github.com/vikramkalta/poc_chatbot/blob/HEAD/self_attention.py',
        learner='randn_instead_of_rand',
        diagnosis="randn_init",
        step="scaling",
        cause="SelfAttention_v1 draws its parameters with torch.randn instead of torch.rand",
        find=(
            "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"
            "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
            "        self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n"
        ),
        replace=(
            "        self.W_query = nn.Parameter(torch.randn(d_in, d_out))\n"
            "        self.W_key = nn.Parameter(torch.randn(d_in, d_out))\n"
            "        self.W_value = nn.Parameter(torch.randn(d_in, d_out))\n"
        ),
    ),
    Bug(
        id="scaling_v1_keys_times_queries",
        source=KIT,
        diagnosis="scores_kq",
        step="scaling",
        cause="SelfAttention_v1 computes keys @ queries.T",
        find=(
            "        values = x @ self.W_value\n"
            "        attn_scores = queries @ keys.T\n"
        ),
        replace=(
            "        values = x @ self.W_value\n"
            "        attn_scores = keys @ queries.T\n"
        ),
    ),
    Bug(
        id="scaling_v2_ignores_qkv_bias",
        source='https://github.com/AnswerDotAI/ModernBERT/pull/79',
        learner='qkv_bias_flag_not_forwarded',
        diagnosis="qkv_bias_ignored",
        step="scaling",
        cause="SelfAttention_v2 ignores qkv_bias (bias=False hard-coded)",
        find=(
            "        super().__init__()\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        ),
        replace=(
            "        super().__init__()\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=False)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=False)\n"
            "        self.W_value = nn.Linear(d_in, d_out, bias=False)\n"
        ),
    ),
    Bug(
        id="scaling_v2_scales_by_d_in",
        source='derived from https://github.com/Graylab/DL4Proteins-notebooks/issues/12',
        learner='scale_by_d_in_variance_demo',
        diagnosis="scale_d_in",
        step="scaling",
        cause="SelfAttention_v2 scales by sqrt(d_in) instead of sqrt(d_k)",
        find=(
            "        values = self.W_value(x)\n"
            "        attn_scores = queries @ keys.T\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
        ),
        replace=(
            "        values = self.W_value(x)\n"
            "        attn_scores = queries @ keys.T\n"
            "        attn_weights = torch.softmax(attn_scores / x.shape[-1] ** 0.5, dim=-1)\n"
        ),
    ),
    # ------------------------------------------------------------------ masking
    Bug(
        id="masking_hides_diagonal",
        source='https://github.com/pbloem/former/issues/10',
        learner='triu_diagonal_zero_masks_self',
        diagnosis="mask_hides_diagonal",
        step="masking",
        cause="mask built with diagonal=0, so each token cannot see itself",
        find="    return torch.triu(ones, diagonal=1)\n",
        replace="    return torch.triu(ones, diagonal=0)\n",
    ),
    Bug(
        id="masking_tril_instead_of_triu",
        source='https://github.com/karpathy/nanoGPT/issues/170',
        learner='tril_passed_as_fill_mask',
        diagnosis="mask_past",
        step="masking",
        cause="returns the tril (visible) mask instead of the hidden upper triangle",
        find="    return torch.triu(ones, diagonal=1)\n",
        replace="    return torch.tril(ones)\n",
    ),
    Bug(
        id="masking_not_renormalised",
        source='https://github.com/huggingface/pytorch-image-models/pull/2236',
        learner='mask_after_softmax_no_renorm',
        diagnosis="not_renormalised",
        step="masking",
        cause="mask_and_renormalize zeroes the future but does not renormalise the rows",
        find="    return masked / masked.sum(dim=-1, keepdim=True)\n",
        replace="    return masked\n",
    ),
    Bug(
        id="masking_row_sum_without_keepdim",
        source='derived from https://github.com/rasbt/LLMs-from-scratch/issues/279',
        learner='renorm_sum_without_keepdim',
        diagnosis="keepdim_missing",
        step="masking",
        cause="row sums taken without keepdim=True, so they broadcast along the wrong axis",
        find="    return masked / masked.sum(dim=-1, keepdim=True)\n",
        replace="    return masked / masked.sum(dim=-1)\n",
    ),
    Bug(
        id="masking_keeps_future",
        source='https://github.com/pytorch/examples/issues/649',
        learner='flipped_mask_examples',
        diagnosis="mask_past",
        step="masking",
        cause="multiplies by the hidden mask (forgot ~), keeping the future instead of the past",
        find="    visible = ~causal_mask(n).to(attn_weights.device)\n",
        replace="    visible = causal_mask(n).to(attn_weights.device)\n",
    ),
    Bug(
        id="masking_fill_zero",
        source='https://github.com/georg-wolflein/good-features/pull/1',
        learner='zero_instead_of_neg_inf',
        diagnosis="zero_fill",
        step="masking",
        cause="future filled with 0 instead of -inf, so it still gets softmax weight",
        find="    masked = scores.masked_fill(hidden, -torch.inf)\n",
        replace="    masked = scores.masked_fill(hidden, 0.0)\n",
    ),
    Bug(
        id="masking_fill_result_discarded",
        source='https://github.com/facebookresearch/ParlAI/pull/3068',
        learner='masked_fill_noop_parlai',
        diagnosis="no_mask",
        step="masking",
        cause="scores.masked_fill(...) result thrown away (not in place), so nothing is masked",
        find=(
            "    masked = scores.masked_fill(hidden, -torch.inf)\n"
            "    return torch.softmax(masked / d_k**0.5, dim=-1)\n"
        ),
        replace=(
            "    scores.masked_fill(hidden, -torch.inf)\n"
            "    return torch.softmax(scores / d_k**0.5, dim=-1)\n"
        ),
    ),
    Bug(
        id="masking_divide_by_dk",
        source='https://github.com/delzac/cntkx/issues/10',
        learner='missing_sqrt',
        diagnosis="scale_dk",
        step="masking",
        cause="masked scores divided by d_k instead of sqrt(d_k)",
        find="    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(masked / d_k, dim=-1)\n",
    ),
    Bug(
        id="masking_zeroed_after_softmax",
        source='https://github.com/huggingface/pytorch-image-models/pull/2236',
        learner='mask_after_softmax_no_renorm',
        diagnosis="not_renormalised",
        step="masking",
        cause="softmax first, then the future zeroed without renormalising",
        find=(
            "    masked = scores.masked_fill(hidden, -torch.inf)\n"
            "    return torch.softmax(masked / d_k**0.5, dim=-1)\n"
        ),
        replace=(
            "    weights = torch.softmax(scores / d_k**0.5, dim=-1)\n"
            "    return weights.masked_fill(hidden, 0.0)\n"
        ),
    ),
    # ------------------------------------------------------------------ dropout
    Bug(
        id="dropout_no_rescale",
        source='derived from https://github.com/rasbt/LLMs-from-scratch/issues/428',
        learner='dropout_no_rescale',
        diagnosis="dropout_no_rescale",
        step="dropout",
        cause="survivors not rescaled by 1 / (1 - p)",
        find="    return attn_weights * keep / (1 - p)\n",
        replace="    return attn_weights * keep\n",
    ),
    Bug(
        id="dropout_p_is_keep_probability",
        source=KIT,
        diagnosis="dropout_keep_probability",
        step="dropout",
        cause="p used as the probability of keeping a weight instead of dropping it",
        find="    keep = torch.rand_like(attn_weights) >= p\n",
        replace="    keep = torch.rand_like(attn_weights) < p\n",
    ),
    Bug(
        id="dropout_active_when_not_training",
        source='https://github.com/rixwew/pytorch-fm/issues/21',
        learner='functional_dropout_always_on',
        diagnosis="dropout_in_eval",
        step="dropout",
        cause="dropout applied even when training=False",
        find="    if not training or p == 0:\n",
        replace="    if p == 0:\n",
    ),
    Bug(
        id="dropout_rescale_by_inverse_p",
        source='https://github.com/lmjohns3/theanets/pull/123',
        learner='dropout_scale_1_over_p',
        diagnosis="dropout_rescale_by_p",
        step="dropout",
        cause="survivors rescaled by 1 / p instead of 1 / (1 - p)",
        find="    return attn_weights * keep / (1 - p)\n",
        replace="    return attn_weights * keep / p\n",
    ),
    Bug(
        id="dropout_scale_by_keep_probability",
        source=KIT,
        diagnosis="dropout_scaled_down",
        step="dropout",
        cause="survivors multiplied by (1 - p) instead of divided by it",
        find="    return attn_weights * keep / (1 - p)\n",
        replace="    return attn_weights * keep * (1 - p)\n",
    ),
    # ------------------------------------------------------------------ causal_attention
    Bug(
        id="causal_softmax_dim1",
        source='https://github.com/datawhalechina/llms-from-scratch-cn/issues/54',
        learner='softmax_dim1_translation',
        diagnosis="softmax_dim",
        step="causal_attention",
        cause="softmax over the query axis (dim=1) of the batched scores",
        find=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="causal_masked_fill_not_in_place",
        source='https://github.com/lucidrains/flamingo-pytorch/issues/10',
        learner='masked_fill_out_of_place_flamingo',
        diagnosis="no_mask",
        step="causal_attention",
        cause="masked_fill without the trailing underscore: the result is discarded, nothing is masked",
        find=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
    ),
    Bug(
        id="causal_mask_not_sliced",
        source='https://github.com/rasbt/LLMs-from-scratch/commit/c7f892550e85f61cfdf978d5ba8ba74d03b97f7a',
        learner='mask_not_sliced',
        diagnosis="mask_not_sliced",
        step="causal_attention",
        cause="mask not sliced to num_tokens, so it fails for sequences shorter than context_length",
        find=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool(), -torch.inf)\n"
        ),
    ),
    Bug(
        id="causal_mask_plain_attribute",
        source='https://github.com/InfiniTensor/llaisys/pull/11',
        learner='mask_not_buffer_device',
        diagnosis="mask_not_buffer",
        step="causal_attention",
        cause="mask stored as a plain attribute instead of register_buffer (not moved by .to(device))",
        find=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
            "        )\n"
        ),
        replace=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)\n"
        ),
    ),
    Bug(
        id="causal_mask_hides_diagonal",
        source='https://github.com/pbloem/former/issues/10',
        learner='triu_diagonal_zero_masks_self',
        diagnosis="mask_hides_diagonal",
        step="causal_attention",
        cause="mask built with diagonal=0: the first token sees nothing and its row becomes NaN",
        find=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
        ),
        replace=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=0)\n'
        ),
    ),
    Bug(
        id="causal_dropout_before_softmax",
        source='https://github.com/skindhu/Build-A-Large-Language-Model-CN/issues/28',
        learner='dropout_before_softmax',
        diagnosis="dropout_before_softmax",
        step="causal_attention",
        cause="dropout applied to the scores before the softmax instead of to the weights",
        find=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace=(
            "        attn_scores = self.dropout(attn_scores)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="causal_no_dropout",
        source='https://github.com/zhouhaoyi/Informer2020/issues/97',
        learner='dropout_created_never_used',
        diagnosis="dropout_not_applied",
        step="causal_attention",
        cause="dropout created but never applied to the attention weights",
        find=(
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace="        return attn_weights @ values\n",
    ),
    Bug(
        id="causal_dropout_on_context",
        source='https://github.com/nikhilbarhate99/min-decision-transformer/issues/2',
        learner='dropout_on_context_vector',
        diagnosis="dropout_on_context",
        step="causal_attention",
        cause="dropout applied to the context vectors instead of the attention weights",
        find=(
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace="        return self.dropout(attn_weights @ values)\n",
    ),
    Bug(
        id="causal_ignores_qkv_bias",
        source='https://github.com/AnswerDotAI/ModernBERT/pull/79',
        learner='qkv_bias_flag_not_forwarded',
        diagnosis="qkv_bias_ignored",
        step="causal_attention",
        cause="CausalAttention ignores qkv_bias (bias=False hard-coded)",
        find=(
            "        self.d_out = d_out\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        ),
        replace=(
            "        self.d_out = d_out\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=False)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=False)\n"
            "        self.W_value = nn.Linear(d_in, d_out, bias=False)\n"
        ),
    ),
    Bug(
        id="causal_scales_by_d_in",
        source='https://github.com/Graylab/DL4Proteins-notebooks/issues/12',
        learner='scale_by_c_embedding',
        diagnosis="scale_d_in",
        step="causal_attention",
        cause="scores scaled by sqrt(d_in) instead of sqrt(d_k)",
        find=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace=(
            "        attn_weights = torch.softmax(attn_scores / d_in**0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="causal_keys_T_on_batch",
        source='https://github.com/flrngel/Self-Attentive-tensorflow/issues/3',
        learner='keys_dot_t_on_3d',
        diagnosis="keys_transpose",
        step="causal_attention",
        cause="keys.T on a batched tensor (reverses every axis) instead of keys.transpose(1, 2)",
        find="        attn_scores = queries @ keys.transpose(1, 2)\n",
        replace="        attn_scores = queries @ keys.T\n",
    ),
    # ------------------------------------------------------------------ mha_wrapper
    Bug(
        id="wrapper_same_head_repeated",
        source='derived from https://github.com/pytorch/pytorch/issues/1053',
        learner='heads_share_one_module',
        diagnosis="heads_shared",
        step="mha_wrapper",
        cause="[CausalAttention(...)] * num_heads repeats one head instead of building independent heads",
        find=(
            "            [\n"
            "                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n"
            "                for _ in range(num_heads)\n"
            "            ]\n"
        ),
        replace="            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)] * num_heads\n",
    ),
    Bug(
        id="wrapper_concat_dim1",
        source='https://github.com/GGchen1997/STEPS_Bioinformatics/issues/3',
        learner='concat_wrong_dim_tokens',
        diagnosis="concat_tokens",
        step="mha_wrapper",
        cause="head outputs concatenated along the token axis (dim=1)",
        find="        return torch.cat([head(x) for head in self.heads], dim=-1)\n",
        replace="        return torch.cat([head(x) for head in self.heads], dim=1)\n",
    ),
    Bug(
        id="wrapper_concat_dim0",
        source='derived from https://github.com/GGchen1997/STEPS_Bioinformatics/issues/3',
        learner='concat_wrong_dim_batch',
        diagnosis="concat_batch",
        step="mha_wrapper",
        cause="head outputs concatenated along the batch axis (dim=0)",
        find="        return torch.cat([head(x) for head in self.heads], dim=-1)\n",
        replace="        return torch.cat([head(x) for head in self.heads], dim=0)\n",
    ),
    Bug(
        id="wrapper_first_head_only",
        source=KIT,
        diagnosis="first_head_only",
        step="mha_wrapper",
        cause="only the first head is used",
        find="        return torch.cat([head(x) for head in self.heads], dim=-1)\n",
        replace="        return self.heads[0](x)\n",
    ),
    Bug(
        id="wrapper_qkv_bias_not_passed",
        source='derived from https://github.com/AnswerDotAI/ModernBERT/pull/79',
        learner='wrapper_qkv_bias_not_forwarded',
        diagnosis="qkv_bias_not_passed",
        step="mha_wrapper",
        cause="qkv_bias not passed on to the heads",
        find="                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n",
        replace="                CausalAttention(d_in, d_out, context_length, dropout)\n",
    ),
    Bug(
        id="wrapper_dropout_not_passed",
        source=KIT,
        diagnosis="dropout_not_passed",
        step="mha_wrapper",
        cause="dropout not passed on to the heads (0.0 hard-coded)",
        find="                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n",
        replace="                CausalAttention(d_in, d_out, context_length, 0.0, qkv_bias)\n",
    ),
    Bug(
        id="wrapper_plain_list",
        source='https://github.com/pytorch/pytorch/issues/1053',
        learner='heads_in_python_list',
        diagnosis="heads_not_modulelist",
        step="mha_wrapper",
        cause="heads kept in a plain Python list instead of nn.ModuleList (parameters not registered)",
        find=(
            "        self.heads = nn.ModuleList(\n"
            "            [\n"
            "                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n"
            "                for _ in range(num_heads)\n"
            "            ]\n"
            "        )\n"
        ),
        replace=(
            "        self.heads = [\n"
            "            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n"
            "            for _ in range(num_heads)\n"
            "        ]\n"
        ),
    ),
    # ------------------------------------------------------------------ multihead_attention
    Bug(
        id="mha_split_view_without_transpose",
        source='https://github.com/hyunwoongko/transformer/issues/15',
        learner='view_heads_without_transpose',
        diagnosis="split_no_transpose",
        step="multihead_attention",
        cause="view straight to (b, num_heads, n, head_dim) without the transpose, scrambling tokens and heads",
        find=(
            "        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
            "        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
            "        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
        ),
        replace=(
            "        queries = self.W_query(x).view(b, self.num_heads, num_tokens, self.head_dim)\n"
            "        keys = self.W_key(x).view(b, self.num_heads, num_tokens, self.head_dim)\n"
            "        values = self.W_value(x).view(b, self.num_heads, num_tokens, self.head_dim)\n"
        ),
    ),
    Bug(
        id="mha_merge_without_transpose",
        source='derived from https://github.com/harvardnlp/annotated-transformer/issues/118',
        learner='combine_heads_without_transpose_back',
        diagnosis="merge_no_transpose",
        step="multihead_attention",
        cause="heads merged back with view but without transposing (b, heads, n, head_dim) to (b, n, heads, head_dim)",
        find="        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n",
        replace="        context = (attn_weights @ values).contiguous().view(b, num_tokens, self.d_out)\n",
    ),
    Bug(
        id="mha_merge_without_contiguous",
        source='https://github.com/facebookresearch/fairseq/issues/2598',
        learner='view_on_noncontiguous',
        diagnosis="view_not_contiguous",
        step="multihead_attention",
        cause="view on the transposed context without .contiguous() (raises)",
        find="        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n",
        replace="        context = (attn_weights @ values).transpose(1, 2).view(b, num_tokens, self.d_out)\n",
    ),
    Bug(
        id="mha_out_proj_skipped",
        source='https://github.com/Kyubyong/transformer/issues/117',
        learner='out_proj_missing',
        diagnosis="no_out_proj",
        step="multihead_attention",
        cause="out_proj created but never applied",
        find="        return self.out_proj(context)\n",
        replace="        return context\n",
    ),
    Bug(
        id="mha_out_proj_bias_follows_qkv_bias",
        source=KIT,
        diagnosis="out_proj_bias",
        step="multihead_attention",
        cause="out_proj built with bias=qkv_bias; it always has a bias",
        find="        self.out_proj = nn.Linear(d_out, d_out)\n",
        replace="        self.out_proj = nn.Linear(d_out, d_out, bias=qkv_bias)\n",
    ),
    Bug(
        id="mha_scales_by_d_out",
        source='https://github.com/omihub777/ViT-CIFAR/pull/12',
        learner='scale_by_model_dim_vit',
        diagnosis="scale_d_out",
        step="multihead_attention",
        cause="scores scaled by sqrt(d_out) instead of sqrt(head_dim)",
        find=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
        replace=(
            "        attn_weights = torch.softmax(attn_scores / self.d_out**0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="mha_softmax_dim_minus2",
        source='https://github.com/rasbt/LLMs-from-scratch/commit/d4754f1bdda95033ad3750ca928e1e5524936dad',
        learner='softmax_dim1_upstream_notebook',
        diagnosis="softmax_dim",
        step="multihead_attention",
        cause="softmax over the query axis (dim=-2)",
        find=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-2)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="mha_mask_not_sliced",
        source='https://github.com/rasbt/LLMs-from-scratch/commit/c7f892550e85f61cfdf978d5ba8ba74d03b97f7a',
        learner='mask_not_sliced',
        diagnosis="mask_not_sliced",
        step="multihead_attention",
        cause="mask not sliced to num_tokens, so it fails for sequences shorter than context_length",
        find=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
        replace=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool(), -torch.inf)\n"
        ),
    ),
    Bug(
        id="mha_masked_fill_not_in_place",
        source='https://github.com/facebookresearch/ParlAI/pull/3068',
        learner='masked_fill_noop_parlai',
        diagnosis="no_mask",
        step="multihead_attention",
        cause="masked_fill without the trailing underscore: nothing is masked",
        find=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
        replace=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
    ),
    Bug(
        id="mha_keys_transpose_1_2",
        source='derived from https://github.com/d2l-ai/d2l-en/pull/1886',
        learner='keys_transpose_1_2_in_4d',
        diagnosis="keys_transpose",
        step="multihead_attention",
        cause="keys.transpose(1, 2) copied from CausalAttention instead of transposing the last two axes",
        find="        attn_scores = queries @ keys.transpose(2, 3)\n",
        replace="        attn_scores = queries @ keys.transpose(1, 2)\n",
    ),
    Bug(
        id="mha_head_dim_from_d_in",
        source='derived from https://github.com/rasbt/LLMs-from-scratch/issues/857',
        learner='head_dim_from_d_in',
        diagnosis="head_dim_wrong",
        step="multihead_attention",
        cause="head_dim computed from d_in instead of d_out",
        find="        self.head_dim = d_out // num_heads\n",
        replace="        self.head_dim = d_in // num_heads\n",
    ),
    Bug(
        id="mha_no_divisibility_check",
        source='https://github.com/pytorch/text/pull/1432',
        learner='no_divisibility_assert',
        diagnosis="no_divisibility_check",
        step="multihead_attention",
        cause="no check that d_out is divisible by num_heads (d_out=6, num_heads=4 builds silently)",
        find=(
            "        if d_out % num_heads != 0:\n"
            '            raise ValueError("d_out must be divisible by num_heads")\n'
        ),
        replace="",
    ),
    Bug(
        id="mha_mask_plain_attribute",
        source='https://github.com/InfiniTensor/llaisys/pull/11',
        learner='mask_not_buffer_device',
        diagnosis="mask_not_buffer",
        step="multihead_attention",
        cause="mask stored as a plain attribute instead of register_buffer (not moved by .to(device))",
        find=(
            "        self.out_proj = nn.Linear(d_out, d_out)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
            "        )\n"
        ),
        replace=(
            "        self.out_proj = nn.Linear(d_out, d_out)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)\n"
        ),
    ),
    Bug(
        id="mha_ignores_qkv_bias",
        source='https://github.com/AnswerDotAI/ModernBERT/pull/79',
        learner='qkv_bias_flag_not_forwarded',
        diagnosis="qkv_bias_ignored",
        step="multihead_attention",
        cause="MultiHeadAttention ignores qkv_bias (bias=False hard-coded)",
        find=(
            "        self.head_dim = d_out // num_heads\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        ),
        replace=(
            "        self.head_dim = d_out // num_heads\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=False)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=False)\n"
            "        self.W_value = nn.Linear(d_in, d_out, bias=False)\n"
        ),
    ),
    Bug(
        id="mha_dropout_on_output",
        source='https://github.com/nikhilbarhate99/min-decision-transformer/issues/2',
        learner='dropout_on_context_vector',
        diagnosis="dropout_on_context",
        step="multihead_attention",
        cause="dropout applied to the output instead of the attention weights",
        find=(
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
            "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
            "        return self.out_proj(context)\n"
        ),
        replace=(
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
            "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
            "        return self.dropout(self.out_proj(context))\n"
        ),
    ),
]

BUGS = KIT_BUGS + LEARNER_BUGS  # the catalogue: tuning and held-out faults (grader.faults.split)
__all__ = ["BUGS", "DEVELOPMENT_BUGS", "KIT_BUGS", "LEARNER_BUGS"]
