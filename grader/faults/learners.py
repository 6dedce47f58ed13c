"""Mistakes from the public record of learners' chapter-3 code, each written as one edit of the clean solution.

Every record names where learners make it (`source`: an issue, pull request,
commit or learner file; "derived from" where the thread shows the same
operation going wrong in a sibling form) and the record of the research notes
it comes from (`learner`). The research notes (114 records, with the evidence
quoted) are summarised in docs/diagnosis.md. None of these was in the kit when
the diagnosis was rewritten: see `grader.faults.split` for the held-out draw.
"""

from grader.faults.mutation import Bug

RASBT = "https://github.com/rasbt/LLMs-from-scratch"
QKV_DRAWS = (
    "    W_query = torch.rand(d_in, d_out)\n"
    "    W_key = torch.rand(d_in, d_out)\n"
    "    W_value = torch.rand(d_in, d_out)\n"
)

# The three projections of CausalAttention / MultiHeadAttention, and the other lines edits anchor on.
CAUSAL_QKV = (
    "        self.d_out = d_out\n"
    "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
    "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
    "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
)
CAUSAL_BUFFER = (
    "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
    "        self.dropout = nn.Dropout(dropout)\n"
    "        self.register_buffer(\n"
    '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
    "        )\n"
)
CAUSAL_FILL = (
    "        attn_scores = queries @ keys.transpose(1, 2)\n"
    "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
)
CAUSAL_TAIL = (
    "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
    "        attn_weights = self.dropout(attn_weights)\n"
    "        return attn_weights @ values\n"
)
MHA_FILL = (
    "        attn_scores = queries @ keys.transpose(2, 3)\n"
    "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
)
MHA_SOFTMAX = (
    "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
    "        attn_weights = self.dropout(attn_weights)\n"
    "\n"
)
MHA_BUFFER = (
    "        self.out_proj = nn.Linear(d_out, d_out)\n"
    "        self.dropout = nn.Dropout(dropout)\n"
    "        self.register_buffer(\n"
    '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
    "        )\n"
)
MHA_SPLIT = (
    "        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
    "        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
    "        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
)
MHA_MERGE = (
    "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
    "        return self.out_proj(context)\n"
)
MHA_FORWARD = (
    "    def forward(self, x):\n"
    "        b, num_tokens, d_in = x.shape\n"
    "        # (b, n, d_out) -> (b, n, heads, head_dim) -> (b, heads, n, head_dim)\n"
) + MHA_SPLIT + "\n" + MHA_FILL + MHA_SOFTMAX + (
    "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
) + MHA_MERGE
MHA_ATTENTION = MHA_FILL + MHA_SOFTMAX + (
    "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
    "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
)
V1_INIT = (
    "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"
    "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
    "        self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n"
)
V2_INIT = (
    "        super().__init__()\n"
    "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
    "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
    "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
    "\n"
    "    def forward(self, x):\n"
    "        queries = self.W_query(x)\n"
)
HEADS = (
    "        self.heads = nn.ModuleList(\n"
    "            [\n"
    "                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n"
    "                for _ in range(num_heads)\n"
    "            ]\n"
    "        )\n"
)
WRAPPER_FORWARD = "        return torch.cat([head(x) for head in self.heads], dim=-1)\n"


LEARNER_BUGS = [
    # ------------------------------------------------------------------ projection
    Bug(
        id="projection_key_randn",
        diagnosis="randn_init",
        step="projection",
        cause="W_key drawn with torch.randn while W_query and W_value use torch.rand",
        source="https://github.com/d2l-ai/d2l-en/pull/2125",
        learner="rand_randn_mixed",
        find="    W_key = torch.rand(d_in, d_out)\n",
        replace="    W_key = torch.randn(d_in, d_out)\n",
    ),
    Bug(
        id="projection_weight_on_the_left",
        diagnosis="weight_left",
        step="projection",
        cause="project multiplies W @ x instead of x @ W",
        source=f"derived from {RASBT}/issues/857",
        learner="matmul_w_at_x",
        find="    return x @ W_query, x @ W_key, x @ W_value\n",
        replace="    return W_query @ x, W_key @ x, W_value @ x\n",
    ),
    Bug(
        id="projection_keys_use_query_weight",
        diagnosis="projection_mixup",
        step="projection",
        cause="keys computed with W_query (one matrix reused for queries and keys)",
        source="https://github.com/stevezheng23/sequence_labeling_tf/pull/81",
        learner="shared_qk_projection",
        find="    return x @ W_query, x @ W_key, x @ W_value\n",
        replace="    return x @ W_query, x @ W_query, x @ W_value\n",
    ),
    Bug(
        id="projection_values_use_key_weight",
        diagnosis="projection_mixup",
        step="projection",
        cause="values computed with W_key (copy-paste)",
        source="derived from https://github.com/stevezheng23/sequence_labeling_tf/pull/81",
        learner="values_from_key_weight",
        find="    return x @ W_query, x @ W_key, x @ W_value\n",
        replace="    return x @ W_query, x @ W_key, x @ W_key\n",
    ),
    Bug(
        id="scaling_v1_key_created_first",
        diagnosis="qkv_order",
        step="scaling",
        cause="SelfAttention_v1 creates W_key before W_query",
        source="https://github.com/neetcode-gh/leetcode/issues/5169",
        learner="init_order_key_first",
        find=V1_INIT,
        replace=(
            "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
            "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"
            "        self.W_value = nn.Parameter(torch.rand(d_in, d_out))\n"
        ),
    ),
    Bug(
        id="scaling_v1_weights_d_out_by_d_in",
        diagnosis="weight_shape",
        step="scaling",
        cause="SelfAttention_v1 stores its matrices as (d_out, d_in) and still computes x @ W",
        source=f"{RASBT}/issues/857",
        learner="weight_stored_d_out_by_d_in",
        find=V1_INIT,
        replace=(
            "        self.W_query = nn.Parameter(torch.rand(d_out, d_in))\n"
            "        self.W_key = nn.Parameter(torch.rand(d_out, d_in))\n"
            "        self.W_value = nn.Parameter(torch.rand(d_out, d_in))\n"
        ),
    ),
    Bug(
        id="scaling_v1_plain_tensors",
        diagnosis="weights_not_parameters",
        step="scaling",
        cause="SelfAttention_v1 keeps its matrices as plain tensors, not nn.Parameter",
        source="https://github.com/Fraunhofer-IIS/prosper_nn/issues/13",
        learner="weights_not_registered_as_parameters",
        find=V1_INIT,
        replace=(
            "        self.W_query = torch.rand(d_in, d_out)\n"
            "        self.W_key = torch.rand(d_in, d_out)\n"
            "        self.W_value = torch.rand(d_in, d_out)\n"
        ),
    ),
    Bug(
        id="scaling_v1_no_projection",
        diagnosis="no_projection",
        step="scaling",
        cause="SelfAttention_v1 uses the inputs themselves as queries, keys and values",
        source="https://github.com/rongzhou7/ADCCA/issues/5",
        learner="no_qkv_projection",
        find=(
            "        queries = x @ self.W_query\n"
            "        keys = x @ self.W_key\n"
            "        values = x @ self.W_value\n"
        ),
        replace=(
            "        queries = x\n"
            "        keys = x\n"
            "        values = x\n"
        ),
    ),
    Bug(
        id="scaling_v2_value_created_first",
        diagnosis="qkv_order",
        step="scaling",
        cause="SelfAttention_v2 creates W_value before W_query and W_key",
        source="derived from https://github.com/neetcode-gh/leetcode/issues/5169",
        learner="init_order_value_first_linear",
        find=V2_INIT,
        replace=(
            "        super().__init__()\n"
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "\n"
            "    def forward(self, x):\n"
            "        queries = self.W_query(x)\n"
        ),
    ),
    Bug(
        id="scaling_v2_linear_in_out_swapped",
        diagnosis="weight_shape",
        step="scaling",
        cause="SelfAttention_v2 declares nn.Linear(d_out, d_in) instead of nn.Linear(d_in, d_out)",
        source=f"derived from {RASBT}/pull/183",
        learner="linear_in_out_swapped",
        find=V2_INIT,
        replace=(
            "        super().__init__()\n"
            "        self.W_query = nn.Linear(d_out, d_in, bias=qkv_bias)\n"
            "        self.W_key = nn.Linear(d_out, d_in, bias=qkv_bias)\n"
            "        self.W_value = nn.Linear(d_out, d_in, bias=qkv_bias)\n"
            "\n"
            "    def forward(self, x):\n"
            "        queries = self.W_query(x)\n"
        ),
    ),
    Bug(
        id="scaling_v2_bias_always_on",
        diagnosis="qkv_bias_forced",
        step="scaling",
        cause="SelfAttention_v2 leaves nn.Linear's default bias=True, whatever qkv_bias says",
        source="https://github.com/hkproj/pytorch-transformer/issues/4",
        learner="linear_bias_default_true",
        find=V2_INIT,
        replace=(
            "        super().__init__()\n"
            "        self.W_query = nn.Linear(d_in, d_out)\n"
            "        self.W_key = nn.Linear(d_in, d_out)\n"
            "        self.W_value = nn.Linear(d_in, d_out)\n"
            "\n"
            "    def forward(self, x):\n"
            "        queries = self.W_query(x)\n"
        ),
    ),
    Bug(
        id="causal_bias_always_on",
        diagnosis="qkv_bias_forced",
        step="causal_attention",
        cause="CausalAttention accepts qkv_bias but builds nn.Linear(d_in, d_out) with its default bias",
        source="https://github.com/AnswerDotAI/ModernBERT/pull/79",
        learner="qkv_bias_flag_not_forwarded",
        find=CAUSAL_QKV,
        replace=(
            "        self.d_out = d_out\n"
            "        self.W_query = nn.Linear(d_in, d_out)\n"
            "        self.W_key = nn.Linear(d_in, d_out)\n"
            "        self.W_value = nn.Linear(d_in, d_out)\n"
        ),
    ),
    Bug(
        id="mha_key_bias_always_on",
        diagnosis="qkv_bias_forced",
        step="multihead_attention",
        cause="MultiHeadAttention gives W_key bias=True whatever qkv_bias says",
        source="https://github.com/karpathy/minGPT/issues/93",
        learner="qkv_bias_true_mingpt",
        find=(
            "        self.head_dim = d_out // num_heads\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        ),
        replace=(
            "        self.head_dim = d_out // num_heads\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=True)\n"
        ),
    ),
    Bug(
        id="causal_value_created_first",
        diagnosis="qkv_order",
        step="causal_attention",
        cause="CausalAttention creates W_value first, so the seeded layers land in the wrong roles",
        source="derived from https://github.com/neetcode-gh/leetcode/issues/5169",
        learner="init_order_value_first_linear",
        find=CAUSAL_QKV,
        replace=(
            "        self.d_out = d_out\n"
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        ),
    ),
    Bug(
        id="causal_values_use_key_weight",
        diagnosis="projection_mixup",
        step="causal_attention",
        cause="CausalAttention computes the values with self.W_key",
        source="derived from https://github.com/stevezheng23/sequence_labeling_tf/pull/81",
        learner="values_from_key_weight",
        find=(
            "        keys = self.W_key(x)\n"
            "        values = self.W_value(x)\n"
            "\n"
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
        ),
        replace=(
            "        keys = self.W_key(x)\n"
            "        values = self.W_key(x)\n"
            "\n"
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
        ),
    ),
    Bug(
        id="causal_linear_in_out_swapped",
        diagnosis="weight_shape",
        step="causal_attention",
        cause="CausalAttention declares nn.Linear(d_out, d_in, ...) for its projections",
        source=f"derived from {RASBT}/pull/183",
        learner="linear_in_out_swapped",
        find=CAUSAL_QKV,
        replace=(
            "        self.d_out = d_out\n"
            "        self.W_query = nn.Linear(d_out, d_in, bias=qkv_bias)\n"
            "        self.W_key = nn.Linear(d_out, d_in, bias=qkv_bias)\n"
            "        self.W_value = nn.Linear(d_out, d_in, bias=qkv_bias)\n"
        ),
    ),
    # ------------------------------------------------------------------ scaling
    Bug(
        id="mha_scales_by_d_in",
        diagnosis="scale_d_in",
        step="multihead_attention",
        cause="MultiHeadAttention scales the scores by sqrt(d_in), the embedding size",
        source="https://github.com/Graylab/DL4Proteins-notebooks/issues/12",
        learner="scale_by_c_embedding",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / d_in**0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="scaling_v1_scales_by_d_in",
        diagnosis="scale_d_in",
        step="scaling",
        cause="SelfAttention_v1 scales by sqrt of the input size",
        source="https://github.com/FareedKhan-dev/train-llm-from-scratch/pull/3",
        learner="scale_by_embedding_size_fareed",
        find=(
            "        attn_scores = queries @ keys.T\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        return attn_weights @ values\n"
            "\n"
            "\n"
            "class SelfAttention_v2(nn.Module):\n"
        ),
        replace=(
            "        attn_scores = queries @ keys.T\n"
            "        attn_weights = torch.softmax(attn_scores / x.shape[-1] ** 0.5, dim=-1)\n"
            "        return attn_weights @ values\n"
            "\n"
            "\n"
            "class SelfAttention_v2(nn.Module):\n"
        ),
    ),
    Bug(
        id="mha_scales_by_keys_shape_1",
        diagnosis="scale_num_heads",
        step="multihead_attention",
        cause="keys.shape[1] (right for 2-D keys) kept after the split: on (b, heads, n, head_dim) it is num_heads",
        source="derived from https://github.com/juho-lee/set_transformer/issues/18",
        learner="scale_by_num_heads",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="causal_scales_by_num_tokens",
        diagnosis="scale_num_tokens",
        step="causal_attention",
        cause="CausalAttention scales by sqrt(num_tokens) instead of sqrt(d_k)",
        source="https://github.com/coki230/build_llm/blob/HEAD/CausalAttention.py",
        learner="scale_by_num_tokens",
        find=CAUSAL_TAIL,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / num_tokens ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="mha_scales_by_num_tokens",
        diagnosis="scale_num_tokens",
        step="multihead_attention",
        cause="MultiHeadAttention scales by sqrt(num_tokens) (keys.shape[-2]) instead of sqrt(head_dim)",
        source="derived from https://github.com/coki230/build_llm/blob/HEAD/CausalAttention.py",
        learner="scale_keys_shape_1_on_3d",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-2] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="causal_not_scaled",
        diagnosis="no_scale",
        step="causal_attention",
        cause="CausalAttention takes the softmax of the unscaled scores",
        source="https://github.com/PAIR-code/tiny-transformers/issues/71",
        learner="no_scaling",
        find=CAUSAL_TAIL,
        replace=(
            "        attn_weights = torch.softmax(attn_scores, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="mha_not_scaled",
        diagnosis="no_scale",
        step="multihead_attention",
        cause="MultiHeadAttention takes the softmax of the unscaled scores",
        source="https://github.com/PAIR-code/tiny-transformers/issues/71",
        learner="no_scaling",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="causal_divide_by_dk",
        diagnosis="scale_dk",
        step="causal_attention",
        cause="CausalAttention divides the scores by d_k instead of sqrt(d_k)",
        source="https://github.com/delzac/cntkx/issues/10",
        learner="missing_sqrt",
        find=CAUSAL_TAIL,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1], dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="mha_multiply_by_one_over_head_dim",
        diagnosis="scale_dk",
        step="multihead_attention",
        cause="MultiHeadAttention multiplies by 1/head_dim (muP-style) instead of 1/sqrt(head_dim)",
        source="https://github.com/thegregyang/NTK4A/issues/3",
        learner="scale_1_over_d_head",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores * (1.0 / keys.shape[-1]), dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="scaling_multiplied_by_sqrt_dk",
        diagnosis="scale_multiplied",
        step="scaling",
        cause="scores multiplied by sqrt(d_k) instead of divided (the inverse scale)",
        source="https://github.com/esceptico/perceiver-io/issues/9",
        learner="scale_multiplied_by_sqrt",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores * d_k**0.5, dim=-1)\n",
    ),
    Bug(
        id="causal_scale_after_softmax",
        diagnosis="scale_after",
        step="causal_attention",
        cause="CausalAttention divides the weights by sqrt(d_k) after the softmax",
        source="derived from https://github.com/bytedance/lightseq/issues/91",
        learner="scale_after_softmax",
        find=CAUSAL_TAIL,
        replace=(
            "        attn_weights = torch.softmax(attn_scores, dim=-1) / keys.shape[-1] ** 0.5\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="causal_scaled_twice",
        diagnosis="scale_dk",
        step="causal_attention",
        cause="CausalAttention divides by sqrt(d_k) when computing the scores and again in the softmax",
        source="derived from https://github.com/openai/guided-diffusion/issues/38",
        learner="double_scaling",
        find=CAUSAL_FILL,
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
    ),
    Bug(
        id="scaling_v2_keys_transpose_1_2",
        diagnosis="keys_transpose",
        step="scaling",
        cause="SelfAttention_v2 uses keys.transpose(1, 2), which does not exist on its 2-D keys",
        source="https://github.com/maxjcohen/transformer/issues/21",
        learner="transpose_1_2_on_2d",
        find=(
            "        values = self.W_value(x)\n"
            "        attn_scores = queries @ keys.T\n"
        ),
        replace=(
            "        values = self.W_value(x)\n"
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
        ),
    ),
    Bug(
        id="causal_keys_permute_noop",
        diagnosis="keys_transpose",
        step="causal_attention",
        cause="keys.permute(0, 1, 2) leaves the keys untransposed",
        source="https://github.com/heykeetae/Self-Attention-GAN/issues/11",
        learner="transpose_noop_permute",
        find=CAUSAL_FILL,
        replace=(
            "        attn_scores = queries @ keys.permute(0, 1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
    ),
    # ------------------------------------------------------------------ masking
    Bug(
        id="causal_mask_tril",
        diagnosis="mask_past",
        step="causal_attention",
        cause="the mask buffer is torch.tril(ones), so the diagonal and the past are hidden and the future shown",
        source="https://github.com/karpathy/nanoGPT/issues/170",
        learner="tril_passed_as_fill_mask",
        find=CAUSAL_BUFFER,
        replace=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.tril(torch.ones(context_length, context_length))\n'
            "        )\n"
        ),
    ),
    Bug(
        id="mha_mask_below_diagonal",
        diagnosis="mask_past",
        step="multihead_attention",
        cause="the mask buffer is torch.tril(ones, diagonal=-1): the past is hidden instead of the future",
        source="https://github.com/pytorch/examples/issues/649",
        learner="flipped_mask_examples",
        find=MHA_BUFFER,
        replace=(
            "        self.out_proj = nn.Linear(d_out, d_out)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.tril(torch.ones(context_length, context_length), diagonal=-1)\n'
            "        )\n"
        ),
    ),
    Bug(
        id="mha_mask_hides_diagonal",
        diagnosis="mask_hides_diagonal",
        step="multihead_attention",
        cause="the mask buffer is built with diagonal=0, so no token sees itself",
        source="https://github.com/pbloem/former/issues/10",
        learner="triu_diagonal_zero_masks_self",
        find=MHA_BUFFER,
        replace=(
            "        self.out_proj = nn.Linear(d_out, d_out)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=0)\n'
            "        )\n"
        ),
    ),
    Bug(
        id="masking_additive_mask_diagonal_zero",
        diagnosis="mask_hides_diagonal",
        step="masking",
        cause="an additive -inf mask built with triu(..., diagonal=0) also hides the diagonal",
        source="https://github.com/pytorch/tutorials/issues/2250",
        learner="diagonal_fix_suggested_wrongly",
        find="    masked = scores.masked_fill(hidden, -torch.inf)\n",
        replace="    masked = scores + torch.triu(torch.full((n, n), -torch.inf), diagonal=0).to(scores.device)\n",
    ),
    Bug(
        id="causal_mask_leaks_next_token",
        diagnosis="mask_off_by_one",
        step="causal_attention",
        cause="the mask buffer uses diagonal=2, so every token also sees the next one",
        source="derived from https://github.com/TransformerLensOrg/TransformerLens/issues/284",
        learner="diagonal_off_by_one_future_leak",
        find=CAUSAL_BUFFER,
        replace=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=2)\n'
            "        )\n"
        ),
    ),
    Bug(
        id="masking_mask_diagonal_2",
        diagnosis="mask_off_by_one",
        step="masking",
        cause="causal_mask uses diagonal=2, shifting the visible window by one position",
        source="https://github.com/RVC-Boss/GPT-SoVITS/issues/965",
        learner="diagonal_mismatch_gptsovits",
        find="    return torch.triu(ones, diagonal=1)\n",
        replace="    return torch.triu(ones, diagonal=2)\n",
    ),
    Bug(
        id="masking_loop_mask_hides_past",
        diagnosis="mask_past",
        step="masking",
        cause="causal_mask built in a loop that hides j < i (the past) instead of j > i",
        source="https://github.com/marin-community/levanter/pull/102",
        learner="loop_mask_wrong_comparison",
        find=(
            "    ones = torch.ones(context_length, context_length, dtype=torch.bool)\n"
            "    return torch.triu(ones, diagonal=1)\n"
        ),
        replace=(
            "    mask = torch.zeros(context_length, context_length, dtype=torch.bool)\n"
            "    for i in range(context_length):\n"
            "        for j in range(context_length):\n"
            "            if j < i:\n"
            "                mask[i, j] = True\n"
            "    return mask\n"
        ),
    ),
    Bug(
        id="causal_fill_zero",
        diagnosis="zero_fill",
        step="causal_attention",
        cause="CausalAttention fills the future scores with 0 instead of -inf",
        source="https://github.com/georg-wolflein/good-features/pull/1",
        learner="zero_instead_of_neg_inf",
        find=CAUSAL_FILL,
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], 0.0)\n"
        ),
    ),
    Bug(
        id="causal_mask_after_softmax",
        diagnosis="not_renormalised",
        step="causal_attention",
        cause="CausalAttention zeroes the future after the softmax and does not renormalise",
        source="https://github.com/huggingface/pytorch-image-models/pull/2236",
        learner="mask_after_softmax_no_renorm",
        find=CAUSAL_FILL + CAUSAL_TAIL,
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = attn_weights.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], 0.0)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="masking_renorm_column_sums",
        diagnosis="renorm_columns",
        step="masking",
        cause="mask_and_renormalize divides by the column sums (dim=-2) instead of the row sums",
        source=f"derived from {RASBT}/issues/279",
        learner="renorm_sum_over_dim0",
        find="    return masked / masked.sum(dim=-1, keepdim=True)\n",
        replace="    return masked / masked.sum(dim=-2, keepdim=True)\n",
    ),
    Bug(
        id="masking_additive_mask_as_keep_mask",
        diagnosis="mask_past",
        step="masking",
        cause="an additive mask (0 = keep, -inf = hide) used as a boolean keep-mask: keep == 0 hides what must be "
              "seen",
        source="https://github.com/harvard-edge/cs249r_book/pull/1785",
        learner="additive_vs_binary_mask_convention",
        find="    masked = scores.masked_fill(hidden, -torch.inf)\n",
        replace=(
            "    keep = torch.triu(torch.full((n, n), -torch.inf), diagonal=1).to(scores.device)\n"
            "    masked = scores.masked_fill(keep == 0, -torch.inf)\n"
        ),
    ),
    Bug(
        id="causal_mask_all_ones",
        diagnosis="mask_all",
        step="causal_attention",
        cause="the mask buffer is torch.ones(...) (torch.triu forgotten): every position is hidden",
        source="https://github.com/JXY001A/LLM-Learn/blob/HEAD/chapter03/CausalAttention.py",
        learner="mask_buffer_missing_triu",
        find=CAUSAL_BUFFER,
        replace=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.ones(context_length, context_length)\n'
            "        )\n"
        ),
    ),
    Bug(
        id="mha_mask_eq_zero",
        diagnosis="mask_past",
        step="multihead_attention",
        cause="the nanoGPT keep-mask convention (== 0) applied to the chapter's hide-mask: diagonal and past hidden",
        source="https://github.com/huggingface/transformers/pull/38094",
        learner="float_mask_cast_to_bool_inverted",
        find=MHA_FILL,
        replace=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask[:num_tokens, :num_tokens] == 0, -torch.inf)\n"
        ),
    ),
    Bug(
        id="mha_sdpa_mask_not_inverted",
        diagnosis="mask_past",
        step="multihead_attention",
        cause="the chapter's mask (True = hide) passed to scaled_dot_product_attention, where True = keep",
        source=f"{RASBT}/issues/1061",
        learner="sdpa_bool_mask_not_inverted",
        find=MHA_ATTENTION,
        replace=(
            "        context = nn.functional.scaled_dot_product_attention(\n"
            "            queries, keys, values, attn_mask=self.mask.bool()[:num_tokens, :num_tokens],\n"
            "            dropout_p=self.dropout.p if self.training else 0.0,\n"
            "        )\n"
            "        context = context.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
        ),
    ),
    # ------------------------------------------------------------------ dropout
    Bug(
        id="dropout_multiplied_by_p",
        diagnosis="dropout_scaled_by_p",
        step="dropout",
        cause="survivors multiplied by p instead of divided by (1 - p)",
        source="https://github.com/NVIDIA/apex/pull/816",
        learner="dropout_scale_apex",
        find="    return attn_weights * keep / (1 - p)\n",
        replace="    return attn_weights * keep * p\n",
    ),
    Bug(
        id="dropout_rescaled_twice",
        diagnosis="dropout_rescaled_twice",
        step="dropout",
        cause="survivors divided by (1 - p) twice",
        source="https://github.com/CSTR-Edinburgh/mlpractical/pull/32",
        learner="dropout_double_scaling",
        find="    return attn_weights * keep / (1 - p)\n",
        replace="    return attn_weights * keep / (1 - p) / (1 - p)\n",
    ),
    Bug(
        id="dropout_mask_shared_across_batch",
        diagnosis="dropout_shared_across_batch",
        step="dropout",
        cause="one (n, n) dropout mask drawn and broadcast over every matrix of the batch",
        source=f"derived from {RASBT}/issues/431",
        learner="dropout_mask_shared_across_batch",
        find="    keep = torch.rand_like(attn_weights) >= p\n",
        replace="    keep = torch.rand(attn_weights.shape[-2:], device=attn_weights.device) >= p\n",
    ),
    Bug(
        id="mha_dropout_before_softmax",
        diagnosis="dropout_before_softmax",
        step="multihead_attention",
        cause="MultiHeadAttention applies dropout to the masked scores before the softmax",
        source="https://github.com/skindhu/Build-A-Large-Language-Model-CN/issues/28",
        learner="dropout_before_softmax",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_scores = self.dropout(attn_scores)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "\n"
        ),
    ),
    Bug(
        id="causal_dropout_replaces_softmax",
        diagnosis="no_softmax",
        step="causal_attention",
        cause="dropout applied to the scaled scores in place of the softmax",
        source="derived from https://github.com/skindhu/Build-A-Large-Language-Model-CN/issues/28",
        learner="dropout_replaces_softmax",
        find=CAUSAL_TAIL,
        replace=(
            "        attn_weights = self.dropout(attn_scores / keys.shape[-1] ** 0.5)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="causal_dropout_on_values",
        diagnosis="dropout_on_context",
        step="causal_attention",
        cause="dropout applied to the value vectors instead of the attention weights",
        source="https://webtagr.com/site?site=www.gilesthomas.com",
        learner="dropout_on_values",
        find=(
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace="        return attn_weights @ self.dropout(values)\n",
    ),
    Bug(
        id="mha_no_dropout",
        diagnosis="dropout_not_applied",
        step="multihead_attention",
        cause="MultiHeadAttention creates self.dropout but never applies it",
        source="https://github.com/zhouhaoyi/Informer2020/issues/97",
        learner="dropout_created_never_used",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "\n"
        ),
    ),
    Bug(
        id="mha_dropout_result_unused",
        diagnosis="dropout_not_applied",
        step="multihead_attention",
        cause="the dropped weights are stored in another variable and never used",
        source="https://github.com/jenkspt/gpt-jax/issues/1",
        learner="dropout_result_overwritten",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        dropped = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="causal_functional_dropout_always_on",
        diagnosis="dropout_in_eval",
        step="causal_attention",
        cause="F.dropout without training=self.training: dropout stays on in eval mode",
        source="https://github.com/rixwew/pytorch-fm/issues/21",
        learner="functional_dropout_always_on",
        find=CAUSAL_TAIL,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = nn.functional.dropout(attn_weights, p=self.dropout.p)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="mha_sdpa_dropout_in_eval",
        diagnosis="dropout_in_eval",
        step="multihead_attention",
        cause="scaled_dot_product_attention given dropout_p=self.dropout.p unconditionally (dropout in eval mode)",
        source="https://github.com/pytorch/pytorch/issues/124464",
        learner="sdpa_dropout_in_eval",
        find=MHA_ATTENTION,
        replace=(
            "        context = nn.functional.scaled_dot_product_attention(\n"
            "            queries, keys, values, is_causal=True, dropout_p=self.dropout.p\n"
            "        )\n"
            "        context = context.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
        ),
    ),
    Bug(
        id="causal_dropout_float_not_module",
        diagnosis="dropout_not_module",
        step="causal_attention",
        cause="self.dropout = dropout stores the rate, and forward calls the float",
        source="derived from https://github.com/zhouhaoyi/Informer2020/issues/97",
        learner="dropout_float_not_module",
        find=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
            "        )\n"
            "\n"
            "    def forward(self, x):\n"
            "        b, num_tokens, d_in = x.shape\n"
            "        queries = self.W_query(x)\n"
        ),
        replace=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = dropout\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
            "        )\n"
            "\n"
            "    def forward(self, x):\n"
            "        b, num_tokens, d_in = x.shape\n"
            "        queries = self.W_query(x)\n"
        ),
    ),
    Bug(
        id="causal_dropout_mask_shared_across_batch",
        diagnosis="dropout_shared_across_batch",
        step="causal_attention",
        cause="hand-written dropout: one (n, n) mask drawn per call and broadcast over the batch",
        source=f"derived from {RASBT}/issues/431",
        learner="dropout_mask_shared_across_batch",
        find=CAUSAL_TAIL,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        if self.training and self.dropout.p > 0:\n"
            "            keep = torch.rand(num_tokens, num_tokens, device=x.device) >= self.dropout.p\n"
            "            attn_weights = attn_weights * keep / (1 - self.dropout.p)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="mha_dropout_mask_shared_across_heads",
        diagnosis="dropout_shared_across_heads",
        step="multihead_attention",
        cause="hand-written dropout with a (b, 1, n, n) mask: every head drops the same weights",
        source=f"derived from {RASBT}/issues/431",
        learner="dropout_mask_shared_across_heads",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        if self.training and self.dropout.p > 0:\n"
            "            keep = torch.rand(b, 1, num_tokens, num_tokens, device=x.device) >= self.dropout.p\n"
            "            attn_weights = attn_weights * keep / (1 - self.dropout.p)\n"
            "\n"
        ),
    ),
    Bug(
        id="causal_dropout_rate_hard_coded",
        diagnosis="dropout_rate_ignored",
        step="causal_attention",
        cause="nn.Dropout(0.1) hard-coded instead of the dropout argument",
        source="https://github.com/OpenNMT/OpenNMT-py/pull/1830",
        learner="dropout_rate_copy_paste",
        find=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
            "        )\n"
            "\n"
            "    def forward(self, x):\n"
            "        b, num_tokens, d_in = x.shape\n"
            "        queries = self.W_query(x)\n"
        ),
        replace=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(0.1)\n"
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
            "        )\n"
            "\n"
            "    def forward(self, x):\n"
            "        b, num_tokens, d_in = x.shape\n"
            "        queries = self.W_query(x)\n"
        ),
    ),
    # ------------------------------------------------------------------ causal_attention
    Bug(
        id="causal_softmax_dim0",
        diagnosis="softmax_dim",
        step="causal_attention",
        cause="softmax over the batch axis (dim=0)",
        source="https://github.com/PetrochukM/PyTorch-NLP/issues/2",
        learner="softmax_dim0_batch",
        find=CAUSAL_TAIL,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Bug(
        id="causal_mask_sliced_rows_only",
        diagnosis="mask_not_sliced",
        step="causal_attention",
        cause="the mask is sliced on its rows only: self.mask[:num_tokens]",
        source=f"derived from {RASBT}/commit/c7f892550e85f61cfdf978d5ba8ba74d03b97f7a",
        learner="mask_sliced_rows_only",
        find=CAUSAL_FILL,
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens], -torch.inf)\n"
        ),
    ),
    Bug(
        id="causal_mask_assigned_before_buffer",
        diagnosis="mask_not_buffer",
        step="causal_attention",
        cause="self.mask assigned as an attribute, then registered as a buffer under the same name (raises)",
        source="https://github.com/OpenNMT/OpenNMT-py/pull/240",
        learner="attribute_before_register_buffer",
        find=CAUSAL_BUFFER,
        replace=(
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
            "        self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)\n"
            '        self.register_buffer("mask", self.mask)\n'
        ),
    ),
    Bug(
        id="causal_mask_unsqueezed",
        diagnosis="mask_shape",
        step="causal_attention",
        cause="the sliced mask is unsqueezed on axis 1, giving (n, 1, n), which does not broadcast over (b, n, n)",
        source=f"derived from {RASBT}/issues/61",
        learner="mask_wrong_unsqueeze",
        find=CAUSAL_FILL,
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens].unsqueeze(1), -torch.inf)\n"
        ),
    ),
    Bug(
        id="causal_mask_not_bool",
        diagnosis="mask_not_bool",
        step="causal_attention",
        cause="the float mask is passed to masked_fill_ without .bool()",
        source=f"derived from {RASBT}/commit/c7f892550e85f61cfdf978d5ba8ba74d03b97f7a",
        learner="mask_not_bool",
        find=CAUSAL_FILL,
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
    ),
    # ------------------------------------------------------------------ mha_wrapper
    Bug(
        id="wrapper_stack_not_cat",
        diagnosis="stack_not_cat",
        step="mha_wrapper",
        cause="torch.stack(..., dim=-1) adds a heads axis instead of concatenating the features",
        source="derived from https://github.com/GGchen1997/STEPS_Bioinformatics/issues/3",
        learner="stack_instead_of_cat",
        find=WRAPPER_FORWARD,
        replace="        return torch.stack([head(x) for head in self.heads], dim=-1)\n",
    ),
    Bug(
        id="wrapper_adds_out_proj",
        diagnosis="wrapper_out_proj",
        step="mha_wrapper",
        cause="an output projection added after the concatenation (the chapter's wrapper has none)",
        source=f"{RASBT}/pull/859",
        learner="wrapper_out_proj_added",
        find=HEADS + "\n    def forward(self, x):\n" + WRAPPER_FORWARD,
        replace=HEADS + (
            "        self.out_proj = nn.Linear(d_out * num_heads, d_out * num_heads)\n"
            "\n"
            "    def forward(self, x):\n"
            "        return self.out_proj(torch.cat([head(x) for head in self.heads], dim=-1))\n"
        ),
    ),
    Bug(
        id="wrapper_head_size_split",
        diagnosis="wrapper_head_size",
        step="mha_wrapper",
        cause="each head built with d_out // num_heads features, as in MultiHeadAttention",
        source=f"{RASBT}/issues/443",
        learner="wrapper_d_out_split",
        find="                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n",
        replace="                CausalAttention(d_in, d_out // num_heads, context_length, dropout, qkv_bias)\n",
    ),
    Bug(
        id="wrapper_init_misspelled",
        diagnosis="init_not_defined",
        step="mha_wrapper",
        cause="the constructor is spelled __init_, so nn.Module's __init__ runs and takes no arguments",
        source="https://github.com/chwla/Machine-Learning/blob/HEAD/llm/ch3/3_4.py",
        learner="wrapper_init_typo",
        find=(
            "    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):\n"
            "        super().__init__()\n"
            "        self.heads = nn.ModuleList(\n"
        ),
        replace=(
            "    def __init_(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):\n"
            "        super().__init__()\n"
            "        self.heads = nn.ModuleList(\n"
        ),
    ),
    Bug(
        id="wrapper_head_args_misordered",
        diagnosis="head_args_order",
        step="mha_wrapper",
        cause="CausalAttention(d_in, d_out, dropout, context_length, qkv_bias): dropout and context_length swapped",
        source="book §3.6.1 (CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)); derived variant",
        learner="wrapper_args_misordered",
        find="                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n",
        replace="                CausalAttention(d_in, d_out, dropout, context_length, qkv_bias)\n",
    ),
    Bug(
        id="wrapper_seed_reset_per_head",
        diagnosis="heads_same_init",
        step="mha_wrapper",
        cause="torch.manual_seed(123) before each head, so every head starts with the same weights",
        source="derived from https://github.com/neetcode-gh/leetcode/issues/5219",
        learner="seed_inside_head_init",
        find=HEADS,
        replace=(
            "        heads = []\n"
            "        for _ in range(num_heads):\n"
            "            torch.manual_seed(123)\n"
            "            heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))\n"
            "        self.heads = nn.ModuleList(heads)\n"
        ),
    ),
    Bug(
        id="wrapper_heads_chained",
        diagnosis="heads_chained",
        step="mha_wrapper",
        cause="the heads are chained in an nn.Sequential, so each head attends over the previous head's output",
        source="derived from https://github.com/pytorch/pytorch/issues/1053",
        learner="heads_chained_sequential",
        find=HEADS + "\n    def forward(self, x):\n" + WRAPPER_FORWARD,
        replace=(
            "        self.heads = nn.Sequential(\n"
            "            *[\n"
            "                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n"
            "                for _ in range(num_heads)\n"
            "            ]\n"
            "        )\n"
            "\n"
            "    def forward(self, x):\n"
            "        return self.heads(x)\n"
        ),
    ),
    # ------------------------------------------------------------------ multihead_attention
    Bug(
        id="mha_heads_never_transposed",
        diagnosis="split_no_transpose",
        step="multihead_attention",
        cause="q, k, v viewed as (b, n, heads, head_dim) and never transposed: attention runs across heads",
        source="https://github.com/iCrewZero/Large-Language-Model-GPT-4/blob/HEAD/model/attention.py",
        learner="heads_never_transposed",
        find=MHA_SPLIT,
        replace=(
            "        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim)\n"
            "        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim)\n"
            "        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim)\n"
        ),
    ),
    Bug(
        id="mha_split_into_batch_of_heads",
        diagnosis="split_no_transpose",
        step="multihead_attention",
        cause="view(b * num_heads, n, head_dim) straight from (b, n, d_out), without the transpose",
        source="https://github.com/reczoo/FuxiCTR/issues/30",
        learner="view_batch_heads_without_transpose",
        find=MHA_SPLIT,
        replace=(
            "        queries = self.W_query(x).view(b * self.num_heads, num_tokens, self.head_dim)\n"
            "        keys = self.W_key(x).view(b * self.num_heads, num_tokens, self.head_dim)\n"
            "        values = self.W_value(x).view(b * self.num_heads, num_tokens, self.head_dim)\n"
        ),
    ),
    Bug(
        id="mha_heads_flattened_with_view",
        diagnosis="view_not_contiguous",
        step="multihead_attention",
        cause="the transposed heads are flattened into the batch with view(b * num_heads, n, head_dim): not "
              "contiguous",
        source="derived from https://github.com/facebookresearch/fairseq/issues/2598",
        learner="view_on_noncontiguous",
        find=MHA_SPLIT,
        replace=MHA_SPLIT + (
            "        queries, keys, values = (\n"
            "            t.view(b * self.num_heads, num_tokens, self.head_dim).view(b, self.num_heads, num_tokens, -1)\n"
            "            for t in (queries, keys, values)\n"
            "        )\n"
        ),
    ),
    Bug(
        id="mha_no_out_proj_module",
        diagnosis="no_out_proj",
        step="multihead_attention",
        cause="no out_proj at all: the merged heads are returned",
        source="https://github.com/jwallbridge/translob/issues/4",
        learner="out_proj_missing_translob",
        find=(
            "        self.out_proj = nn.Linear(d_out, d_out)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
        ),
        replace="        self.dropout = nn.Dropout(dropout)\n",
    ),
    Bug(
        id="mha_out_proj_relu",
        diagnosis="out_proj_activation",
        step="multihead_attention",
        cause="the output projection is followed by a ReLU",
        source="https://github.com/Kyubyong/transformer/pull/17",
        learner="out_proj_with_activation",
        find="        return self.out_proj(context)\n",
        replace="        return torch.relu(self.out_proj(context))\n",
    ),
    Bug(
        id="mha_out_proj_per_head",
        diagnosis="out_proj_per_head",
        step="multihead_attention",
        cause="out_proj is nn.Linear(head_dim, head_dim) applied to each head before the merge",
        source="https://github.com/lucidrains/vit-pytorch/issues/335",
        learner="out_proj_per_head",
        find="        self.out_proj = nn.Linear(d_out, d_out)\n" + MHA_BUFFER.split("\n", 1)[1] + "\n" + MHA_FORWARD,
        replace=(
            "        self.out_proj = nn.Linear(self.head_dim, self.head_dim)\n" + MHA_BUFFER.split("\n", 1)[1] + "\n"
            + MHA_FORWARD.replace(
                "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
                "        return self.out_proj(context)\n",
                "        context = self.out_proj(attn_weights @ values)\n"
                "        return context.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n")
        ),
    ),
    Bug(
        id="mha_out_proj_from_d_in",
        diagnosis="out_proj_shape",
        step="multihead_attention",
        cause="out_proj declared as nn.Linear(d_in, d_out)",
        source=f"{RASBT}/pull/183",
        learner="out_proj_dims_d_in",
        find="        self.out_proj = nn.Linear(d_out, d_out)\n",
        replace="        self.out_proj = nn.Linear(d_in, d_out)\n",
    ),
    Bug(
        id="mha_softmax_over_heads_and_keys",
        diagnosis="softmax_dim",
        step="multihead_attention",
        cause="one softmax over every head's scores of a sequence at once (flattened), not per row",
        source="https://github.com/facebookresearch/detr/issues/247",
        learner="softmax_over_flattened_heads",
        find=MHA_SOFTMAX,
        replace=(
            "        scaled = attn_scores / keys.shape[-1] ** 0.5\n"
            "        attn_weights = torch.softmax(scaled.flatten(1, 3), dim=-1).view_as(scaled)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="mha_softmax_dim1",
        diagnosis="softmax_dim",
        step="multihead_attention",
        cause="CausalAttention's early dim=1 softmax copied into MultiHeadAttention, where axis 1 is the heads",
        source=f"{RASBT}/commit/d4754f1bdda95033ad3750ca928e1e5524936dad",
        learner="softmax_dim1_upstream_notebook",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
]

# Development faults, added after the held-out split was drawn (grader.faults.split): each is a sibling, from the
# research notes, of a cause that had no tuning fault. They stay outside the catalogue (BUGS), whose held-out
# share the draw fixed, and `make diagnose-report` reports them apart.
DEVELOPMENT_BUGS = [
    Bug(
        id="scaling_v2_scales_by_keys_shape_0",
        diagnosis="scale_num_tokens",
        step="scaling",
        cause="SelfAttention_v2 scales by sqrt(keys.shape[0]), the number of tokens of its 2-D keys",
        source="derived from https://github.com/coki230/build_llm/blob/HEAD/CausalAttention.py",
        learner="scale_keys_shape_1_on_3d",
        find=(
            "        values = self.W_value(x)\n"
            "        attn_scores = queries @ keys.T\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
        ),
        replace=(
            "        values = self.W_value(x)\n"
            "        attn_scores = queries @ keys.T\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[0] ** 0.5, dim=-1)\n"
        ),
    ),
    Bug(
        id="mha_scales_by_num_heads",
        diagnosis="scale_num_heads",
        step="multihead_attention",
        cause="MultiHeadAttention scales by sqrt(num_heads)",
        source="derived from https://github.com/juho-lee/set_transformer/issues/18",
        learner="scale_by_num_heads",
        find=MHA_SOFTMAX,
        replace=(
            "        attn_weights = torch.softmax(attn_scores / self.num_heads**0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
        ),
    ),
    Bug(
        id="mha_dropout_rate_hard_coded",
        diagnosis="dropout_rate_ignored",
        step="multihead_attention",
        cause="nn.Dropout(0.1) hard-coded in MultiHeadAttention",
        source="https://github.com/OpenNMT/OpenNMT-py/pull/1830",
        learner="dropout_rate_copy_paste",
        find=(
            "        self.out_proj = nn.Linear(d_out, d_out)\n"
            "        self.dropout = nn.Dropout(dropout)\n"
        ),
        replace=(
            "        self.out_proj = nn.Linear(d_out, d_out)\n"
            "        self.dropout = nn.Dropout(0.1)\n"
        ),
    ),
    Bug(
        id="mha_mask_unsqueezed",
        diagnosis="mask_shape",
        step="multihead_attention",
        cause="the sliced mask unsqueezed on axis 1: (n, 1, n) does not broadcast over (b, heads, n, n)",
        source=f"derived from {RASBT}/issues/61",
        learner="mask_wrong_unsqueeze",
        find=MHA_FILL,
        replace=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens].unsqueeze(1), -torch.inf)\n"
        ),
    ),
    Bug(
        id="mha_out_proj_to_d_in",
        diagnosis="out_proj_shape",
        step="multihead_attention",
        cause="out_proj declared as nn.Linear(d_out, d_in)",
        source=f"{RASBT}/pull/183",
        learner="out_proj_dims_d_in",
        find="        self.out_proj = nn.Linear(d_out, d_out)\n",
        replace="        self.out_proj = nn.Linear(d_out, d_in)\n",
    ),
    # Issue 27's families (development faults, written by the engineer who tuned the diagnosis, with sight of
    # its code: they measure nothing held out). Each is one family of the learner reports.
    Bug(
        id="dev27_causal_fill_positive_inf",
        diagnosis="fill_positive_inf",
        step="causal_attention",
        cause="the future is filled with +inf instead of -inf (every row with a hidden position becomes NaN)",
        source="derived from https://github.com/lucidrains/memory-compressed-attention/issues/2 (issue 27 family; development)",
        find=CAUSAL_FILL,
        replace=CAUSAL_FILL.replace("-torch.inf)", "torch.inf)"),
    ),
    Bug(
        id="dev27_masking_fill_positive_inf",
        diagnosis="fill_positive_inf",
        step="masking",
        cause="causal_attention_weights fills the hidden scores with float('inf')",
        source="derived from https://github.com/lucidrains/memory-compressed-attention/issues/2 (issue 27 family; development)",
        find="    masked = scores.masked_fill(hidden, -torch.inf)\n",
        replace="    masked = scores.masked_fill(hidden, float('inf'))\n",
    ),
    Bug(
        id="dev27_scaling_pow_one_half",
        diagnosis="scale_precedence",
        step="scaling",
        cause="scores / d_k**1/2, read as (scores / d_k) / 2",
        source="derived from https://www.alpharithms.com/square-root-python-493615/ (issue 27 family; development)",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores / d_k**1/2, dim=-1)\n",
    ),
    Bug(
        id="dev27_scaling_by_num_keys",
        diagnosis="scale_num_keys",
        step="scaling",
        cause="the scores are divided by the number of keys, scores.shape[-1]",
        source="derived from https://github.com/jadore801120/attention-is-all-you-need-pytorch/issues/42 (issue 27 family; development)",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores / scores.shape[-1], dim=-1)\n",
    ),
    Bug(
        id="dev27_variance_is_std",
        diagnosis="variance_is_std",
        step="scaling",
        cause="dot_product_variance returns standard deviations",
        source="book (chapter 3's variance argument; issue 27 family; development)",
        find="    variance_before = dots.var(unbiased=False).item()\n",
        replace="    variance_before = dots.std(unbiased=False).item()\n",
    ),
    Bug(
        id="dev27_variance_products_not_summed",
        diagnosis="dots_not_summed",
        step="scaling",
        cause="the element-wise products q * k are never summed into dot products",
        source="book (chapter 3's variance argument; issue 27 family; development)",
        find="    dots = (q * k).sum(dim=-1)\n",
        replace="    dots = q * k\n",
    ),
    Bug(
        id="dev27_variance_generator_reseeded",
        diagnosis="variance_same_draw",
        step="scaling",
        cause="a new generator seeded with `seed` draws k, so k equals q",
        source="derived from https://github.com/mrdbourke/pytorch-deep-learning/issues/245 (issue 27 family; development)",
        find="    k = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)\n",
        replace="    k = torch.randn(num_trials, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)\n",
    ),
    Bug(
        id="dev27_projection_fused_draw",
        diagnosis="init_fused",
        step="projection",
        cause="one torch.rand(d_in, 3 * d_out) draw split into three",
        source="book (chapter 3's seeded draws; issue 27 family; development)",
        find=QKV_DRAWS,
        replace="    W_query, W_key, W_value = torch.rand(d_in, 3 * d_out).chunk(3, dim=-1)\n",
    ),
    Bug(
        id="dev27_projection_reseeded",
        diagnosis="init_reseeded",
        step="projection",
        cause="init_qkv_weights calls torch.manual_seed(123) itself",
        source="derived from https://github.com/mrdbourke/pytorch-deep-learning/issues/245 (issue 27 family; development)",
        find=QKV_DRAWS,
        replace="    torch.manual_seed(123)\n" + QKV_DRAWS,
    ),
    Bug(
        id="dev27_scaling_keys_not_transposed",
        diagnosis="keys_not_transposed",
        step="scaling",
        cause="attention_scores returns queries @ keys (raises for non-square inputs)",
        source="book (chapter 3's attention scores; issue 27's student trial; development)",
        find="    return queries @ keys.transpose(-2, -1)\n",
        replace="    return queries @ keys\n",
    ),
    Bug(
        id="dev27_causal_mask_sliced_by_batch",
        diagnosis="mask_sliced_by_batch",
        step="causal_attention",
        cause="the mask is sliced with b = x.shape[0], the batch size",
        source="book (chapter 3's CausalAttention; issue 27's learner reports; development)",
        find=CAUSAL_FILL,
        replace=CAUSAL_FILL.replace("[:num_tokens, :num_tokens]", "[:b, :b]"),
    ),
    Bug(
        id="dev27_causal_linear_weight_matmul",
        diagnosis="linear_weight_matmul",
        step="causal_attention",
        cause="queries = x @ self.W_query.weight (nn.Linear's weight is (d_out, d_in))",
        source="book (chapter 3's SelfAttention_v2; issue 27's learner reports; development)",
        find="        queries = self.W_query(x)\n        keys = self.W_key(x)\n        values = self.W_value(x)\n\n"
             "        attn_scores = queries @ keys.transpose(1, 2)\n",
        replace="        queries = x @ self.W_query.weight\n        keys = x @ self.W_key.weight\n"
                "        values = x @ self.W_value.weight\n\n        attn_scores = queries @ keys.transpose(1, 2)\n",
    ),
]
