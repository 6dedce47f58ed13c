"""Correct but different implementations: each is one find/replace on the clean solution, confined to one step.

A grader must accept every one of these. They keep the seeded construction order
(W_query, W_key, W_value, then out_proj; no other random draw in __init__).
"""
from grader.faults.mutation import Mutation

VARIANTS = [
    # ------------------------------------------------------------------ projection
    Mutation(
        id="projection_matmul",
        step="projection",
        cause="project with torch.matmul instead of @",
        find="    return x @ W_query, x @ W_key, x @ W_value\n",
        replace=(
            "    queries = torch.matmul(x, W_query)\n"
            "    keys = torch.matmul(x, W_key)\n"
            "    values = torch.matmul(x, W_value)\n"
            "    return queries, keys, values\n"
        ),
    ),
    # ------------------------------------------------------------------ scaling
    Mutation(
        id="scaling_matmul_scores",
        step="scaling",
        cause="attention scores via torch.matmul(queries, keys.transpose(-1, -2))",
        find="    return queries @ keys.transpose(-2, -1)\n",
        replace="    return torch.matmul(queries, keys.transpose(-1, -2))\n",
    ),
    Mutation(
        id="scaling_einsum_scores",
        step="scaling",
        cause="attention scores via torch.einsum",
        find="    return queries @ keys.transpose(-2, -1)\n",
        replace='    return torch.einsum("...id,...jd->...ij", queries, keys)\n',
    ),
    Mutation(
        id="scaling_einsum_context",
        step="scaling",
        cause="context vectors via torch.einsum",
        find=(
            '    """Each context vector is the attention-weighted sum of the value vectors."""\n'
            "    return attn_weights @ values\n"
        ),
        replace=(
            '    """Each context vector is the attention-weighted sum of the value vectors."""\n'
            '    return torch.einsum("...ij,...jd->...id", attn_weights, values)\n'
        ),
    ),
    Mutation(
        id="scaling_manual_softmax",
        step="scaling",
        cause="hand-written numerically stable softmax (subtract the row max, exp, divide by the row sum)",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace=(
            "    scaled = scores / math.sqrt(d_k)\n"
            "    shifted = scaled - scaled.max(dim=-1, keepdim=True).values\n"
            "    exps = torch.exp(shifted)\n"
            "    return exps / exps.sum(dim=-1, keepdim=True)\n"
        ),
    ),
    Mutation(
        id="scaling_debug_print",
        step="scaling",
        cause="leftover print() calls inside a function",
        find=(
            '    """Unnormalised attention scores: the dot product of every query with every key.\n'
            "\n"
            "    `queries` and `keys` have shape `(..., n, d_k)`; the result has shape\n"
            "    `(..., n, n)` with entry `[i, j]` = query i · key j.\n"
            '    """\n'
            "    return queries @ keys.transpose(-2, -1)\n"
        ),
        replace=(
            '    """Unnormalised attention scores: the dot product of every query with every key.\n'
            "\n"
            "    `queries` and `keys` have shape `(..., n, d_k)`; the result has shape\n"
            "    `(..., n, n)` with entry `[i, j]` = query i · key j.\n"
            '    """\n'
            '    print("queries:", queries.shape, "keys:", keys.shape)\n'
            "    scores = queries @ keys.transpose(-2, -1)\n"
            "    print(scores)\n"
            "    return scores\n"
        ),
    ),
    Mutation(
        id="scaling_variance_loop",
        step="scaling",
        cause="dot_product_variance with a Python loop over trials, one float32 pair per draw",
        find=(
            "    q = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)\n"
            "    k = torch.randn(num_trials, dim, generator=generator, dtype=torch.float64)\n"
            "    dots = (q * k).sum(dim=-1)\n"
        ),
        replace=(
            "    results = []\n"
            "    for _ in range(num_trials):\n"
            "        q = torch.randn(dim, generator=generator)\n"
            "        k = torch.randn(dim, generator=generator)\n"
            "        results.append(float(torch.dot(q, k)))\n"
            "    dots = torch.tensor(results, dtype=torch.float64)\n"
        ),
    ),
    Mutation(
        id="scaling_v1_softmax_dim1",
        step="scaling",
        cause="SelfAttention_v1 takes its softmax over dim=1, the last axis of its 2-D scores",
        find=(
            "        values = x @ self.W_value\n"
            "        attn_scores = queries @ keys.T\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
        ),
        replace=(
            "        values = x @ self.W_value\n"
            "        attn_scores = queries @ keys.T\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[1] ** 0.5, dim=1)\n"
        ),
    ),
    # ------------------------------------------------------------------ masking
    Mutation(
        id="masking_arange_comparison",
        step="masking",
        cause="causal mask from comparing column and row indices with torch.arange",
        find=(
            "    ones = torch.ones(context_length, context_length, dtype=torch.bool)\n"
            "    return torch.triu(ones, diagonal=1)\n"
        ),
        replace=(
            "    positions = torch.arange(context_length)\n"
            "    return positions[None, :] > positions[:, None]\n"
        ),
    ),
    Mutation(
        id="masking_renormalize_tril_multiply",
        step="masking",
        cause="mask_and_renormalize multiplies by a lower-triangular matrix of ones",
        find=(
            "    n = attn_weights.shape[-1]\n"
            "    visible = ~causal_mask(n).to(attn_weights.device)\n"
            "    masked = attn_weights * visible\n"
        ),
        replace="    masked = attn_weights * torch.tril(torch.ones_like(attn_weights))\n",
    ),
    Mutation(
        id="masking_torch_where",
        step="masking",
        cause="future filled with torch.where instead of masked_fill",
        find="    masked = scores.masked_fill(hidden, -torch.inf)\n",
        replace="    masked = torch.where(hidden, torch.full_like(scores, -torch.inf), scores)\n",
    ),
    Mutation(
        id="masking_manual_softmax",
        step="masking",
        cause="hand-written stable softmax after filling the future with -inf",
        find="    return torch.softmax(masked / d_k**0.5, dim=-1)\n",
        replace=(
            "    scaled = masked / d_k**0.5\n"
            "    exps = torch.exp(scaled - scaled.amax(dim=-1, keepdim=True))\n"
            "    return exps / exps.sum(dim=-1, keepdim=True)\n"
        ),
    ),
    # ------------------------------------------------------------------ dropout
    Mutation(
        id="dropout_functional",
        step="dropout",
        cause="inverted dropout via torch.nn.functional.dropout",
        find=(
            "    if not training or p == 0:\n"
            "        return attn_weights\n"
            "    if p == 1:  # every weight dropped, as nn.Dropout(1) does (the rescaling below would give 0 / 0)\n"
            "        return torch.zeros_like(attn_weights)\n"
            "    keep = torch.rand_like(attn_weights) >= p\n"
            "    return attn_weights * keep / (1 - p)\n"
        ),
        replace="    return torch.nn.functional.dropout(attn_weights, p, training)\n",
    ),
    # ------------------------------------------------------------------ causal_attention
    Mutation(
        id="causal_fill_minus_1e9",
        step="causal_attention",
        cause="future filled with -1e9 instead of -inf",
        find=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -1e9)\n"
        ),
    ),
    Mutation(
        id="causal_masked_fill_assigned",
        step="causal_attention",
        cause="out-of-place masked_fill whose result is assigned back",
        find=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
        replace=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
    ),
    Mutation(
        id="causal_tril_mask_eq0",
        step="causal_attention",
        cause="stores the visible (tril of ones) mask and hides where it == 0",
        find=(
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)\n'
            "        )\n"
            "\n"
            "    def forward(self, x):\n"
            "        b, num_tokens, d_in = x.shape\n"
            "        queries = self.W_query(x)\n"
            "        keys = self.W_key(x)\n"
            "        values = self.W_value(x)\n"
            "\n"
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
        replace=(
            '        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))\n'
            "\n"
            "    def forward(self, x):\n"
            "        b, num_tokens, d_in = x.shape\n"
            "        queries = self.W_query(x)\n"
            "        keys = self.W_key(x)\n"
            "        values = self.W_value(x)\n"
            "\n"
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens] == 0, -torch.inf)\n"
        ),
    ),
    Mutation(
        id="causal_bool_buffer",
        step="causal_attention",
        cause="mask registered directly as a bool buffer with torch.ones(...).triu(1).bool()",
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
            '        self.register_buffer("mask", torch.ones(context_length, context_length).triu(1).bool())\n'
        ),
    ),
    Mutation(
        id="causal_non_persistent_buffer",
        step="causal_attention",
        cause="mask registered as a non-persistent buffer (persistent=False)",
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
            "        self.register_buffer(\n"
            '            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1), persistent=False\n'
            "        )\n"
        ),
    ),
    Mutation(
        id="causal_einsum",
        step="causal_attention",
        cause="scores and context vectors via torch.einsum",
        find=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace=(
            '        attn_scores = torch.einsum("bid,bjd->bij", queries, keys)\n'
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            '        return torch.einsum("bij,bjd->bid", attn_weights, values)\n'
        ),
    ),
    Mutation(
        id="causal_sdpa",
        step="causal_attention",
        cause="F.scaled_dot_product_attention with is_causal=True and the module's dropout probability",
        find=(
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace=(
            "        return nn.functional.scaled_dot_product_attention(\n"
            "            queries, keys, values, is_causal=True, dropout_p=self.dropout.p if self.training else 0.0\n"
            "        )\n"
        ),
    ),
    # ------------------------------------------------------------------ mha_wrapper
    Mutation(
        id="wrapper_append_loop",
        step="mha_wrapper",
        cause="heads appended to an empty nn.ModuleList in a loop",
        find=(
            "        self.heads = nn.ModuleList(\n"
            "            [\n"
            "                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n"
            "                for _ in range(num_heads)\n"
            "            ]\n"
            "        )\n"
        ),
        replace=(
            "        self.heads = nn.ModuleList()\n"
            "        for _ in range(num_heads):\n"
            "            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))\n"
        ),
    ),
    Mutation(
        id="wrapper_heads_named_otherwise",
        step="mha_wrapper",
        cause="the nn.ModuleList of heads kept under a name of the student's own (a blind cohort's correct file)",
        find=(
            "        self.heads = nn.ModuleList(\n"
            "            [\n"
            "                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n"
            "                for _ in range(num_heads)\n"
            "            ]\n"
            "        )\n"
            "\n"
            "    def forward(self, x):\n"
            "        return torch.cat([head(x) for head in self.heads], dim=-1)\n"
        ),
        replace=(
            "        self.attention_heads = nn.ModuleList(\n"
            "            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]\n"
            "        )\n"
            "\n"
            "    def forward(self, x):\n"
            "        return torch.cat([head(x) for head in self.attention_heads], dim=-1)\n"
        ),
    ),
    Mutation(
        id="wrapper_concat_dim2",
        step="mha_wrapper",
        cause="head outputs concatenated with dim=2 (the last axis of (b, n, d_out))",
        find="        return torch.cat([head(x) for head in self.heads], dim=-1)\n",
        replace=(
            "        outputs = []\n"
            "        for head in self.heads:\n"
            "            outputs.append(head(x))\n"
            "        return torch.cat(outputs, dim=2)\n"
        ),
    ),
    # ------------------------------------------------------------------ multihead_attention
    Mutation(
        id="mha_reshape_permute",
        step="multihead_attention",
        cause="reshape/permute instead of view/transpose to split and merge the heads",
        find=(
            "        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
            "        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
            "        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
            "\n"
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
            "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
        ),
        replace=(
            "        queries = self.W_query(x).reshape(b, num_tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)\n"
            "        keys = self.W_key(x).reshape(b, num_tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)\n"
            "        values = self.W_value(x).reshape(b, num_tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)\n"
            "\n"
            "        attn_scores = queries @ keys.permute(0, 1, 3, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
            "        context = (attn_weights @ values).permute(0, 2, 1, 3).reshape(b, num_tokens, self.d_out)\n"
        ),
    ),
    Mutation(
        id="mha_where_minus_1e9",
        step="multihead_attention",
        cause="future filled with torch.where and -1e9 instead of masked_fill_ and -inf",
        find=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
        ),
        replace=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        hidden = self.mask[:num_tokens, :num_tokens] == 1\n"
            "        attn_scores = torch.where(hidden, torch.full_like(attn_scores, -1e9), attn_scores)\n"
        ),
    ),
    Mutation(
        id="mha_sdpa",
        step="multihead_attention",
        cause="F.scaled_dot_product_attention per head with is_causal=True and the module's dropout probability",
        find=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
            "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
        ),
        replace=(
            "        context = nn.functional.scaled_dot_product_attention(\n"
            "            queries, keys, values, is_causal=True, dropout_p=self.dropout.p if self.training else 0.0\n"
            "        )\n"
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
            "        context = context.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
        ),
    ),
    Mutation(
        id="mha_debug_print",
        step="multihead_attention",
        cause="leftover print() calls inside forward",
        find=(
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
        ),
        replace=(
            "        attn_weights = self.dropout(attn_weights)\n"
            '        print("attention weights:", attn_weights.shape)\n'
            "        print(attn_weights[0, 0])\n"
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
        ),
    ),
]

RASBT = "https://github.com/rasbt/LLMs-from-scratch"

# Written fresh for the fault model (issue 13), from the research notes' correct variants (docs/diagnosis.md):
# a grader that names a cause for any of these has a probe that is too eager.
FRESH_VARIANTS = [
    Mutation(
        id="projection_einsum",
        step="projection",
        cause="project with torch.einsum",
        source=f"{RASBT}/blob/main/ch03/02_bonus_efficient-multihead-attention",
        find="    return x @ W_query, x @ W_key, x @ W_value\n",
        replace='    return tuple(torch.einsum("...nd,de->...ne", x, W) for W in (W_query, W_key, W_value))\n',
    ),
    Mutation(
        id="scaling_math_sqrt",
        step="scaling",
        cause="scores divided by math.sqrt(d_k)",
        source="https://github.com/Adstefnum/adesina-gpt/blob/HEAD/attention.py",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores / math.sqrt(d_k), dim=-1)\n",
    ),
    Mutation(
        id="scaling_multiply_inverse_sqrt",
        step="scaling",
        cause="scores multiplied by d_k ** -0.5",
        source="https://github.com/karpathy/ng-video-lecture/issues/46",
        find="    return torch.softmax(scores / d_k**0.5, dim=-1)\n",
        replace="    return torch.softmax(scores * d_k**-0.5, dim=-1)\n",
    ),
    Mutation(
        id="masking_fill_minus_1e9",
        step="masking",
        cause="future scores filled with -1e9 instead of -inf",
        source="https://github.com/pranavmahabs/dnabert-enhancer/blob/HEAD/model/transformer.py",
        find="    masked = scores.masked_fill(hidden, -torch.inf)\n",
        replace="    masked = scores.masked_fill(hidden, -1e9)\n",
    ),
    Mutation(
        id="masking_keep_mask_eq_zero",
        step="masking",
        cause="a tril keep-mask, hidden where it is 0",
        source="https://github.com/karpathy/nanoGPT/issues/170",
        find="    masked = scores.masked_fill(hidden, -torch.inf)\n",
        replace=(
            "    keep = torch.tril(torch.ones(n, n, device=scores.device))\n"
            "    masked = scores.masked_fill(keep == 0, float(\"-inf\"))\n"
        ),
    ),
    Mutation(
        id="masking_additive_float_mask",
        step="masking",
        cause="an additive mask: scores + triu(full(-inf), diagonal=1)",
        source="https://github.com/niujiazhen/happy-llm/blob/HEAD/docs/chapter2/code/maskSelfAttention.py",
        find="    masked = scores.masked_fill(hidden, -torch.inf)\n",
        replace="    masked = scores + torch.triu(torch.full((n, n), -torch.inf, device=scores.device), diagonal=1)\n",
    ),
    Mutation(
        id="dropout_bernoulli",
        step="dropout",
        cause="keep mask drawn with torch.bernoulli(1 - p)",
        source="https://github.com/pytorch/pytorch/issues/149726",
        find="    keep = torch.rand_like(attn_weights) >= p\n",
        replace="    keep = torch.bernoulli(torch.full_like(attn_weights, 1 - p)).bool()\n",
    ),
    Mutation(
        id="dropout_float_keep_mask",
        step="dropout",
        cause="keep mask as floats (rand > p), multiplied in",
        source=f"{RASBT}/issues/431",
        find="    keep = torch.rand_like(attn_weights) >= p\n    return attn_weights * keep / (1 - p)\n",
        replace=(
            "    keep = (torch.rand_like(attn_weights) > p).float()\n"
            "    return attn_weights * keep / (1 - p)\n"
        ),
    ),
    Mutation(
        id="causal_finfo_min_fill",
        step="causal_attention",
        cause="future scores filled with torch.finfo(dtype).min",
        source="https://github.com/jianc99/FlexSpec_Test/blob/HEAD/test.py",
        find="        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
             "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
             "        attn_weights = self.dropout(attn_weights)\n"
             "        return attn_weights @ values\n",
        replace="        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], "
                "torch.finfo(attn_scores.dtype).min)\n"
                "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
                "        attn_weights = self.dropout(attn_weights)\n"
                "        return attn_weights @ values\n",
    ),
    Mutation(
        id="causal_scale_queries_first",
        step="causal_attention",
        cause="queries divided by sqrt(d_k) before the dot products",
        source="https://github.com/karpathy/minGPT/pull/55",
        find=(
            "        queries = self.W_query(x)\n"
            "        keys = self.W_key(x)\n"
            "        values = self.W_value(x)\n"
            "\n"
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
        ),
        replace=(
            "        queries = self.W_query(x) / self.d_out**0.5\n"
            "        keys = self.W_key(x)\n"
            "        values = self.W_value(x)\n"
            "\n"
            "        attn_scores = queries @ keys.transpose(1, 2)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores, dim=-1)\n"
        ),
    ),
    Mutation(
        id="causal_functional_dropout_training_flag",
        step="causal_attention",
        cause="F.dropout with training=self.training and the module's rate",
        source="https://github.com/rixwew/pytorch-fm/issues/21",
        find=(
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace=(
            "        attn_weights = nn.functional.dropout(attn_weights, p=self.dropout.p, training=self.training)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Mutation(
        id="causal_functional_softmax",
        step="causal_attention",
        cause="nn.functional.softmax instead of torch.softmax",
        source="https://github.com/niujiazhen/happy-llm/blob/HEAD/docs/chapter2/code/maskSelfAttention.py",
        find=(
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
        replace=(
            "        attn_weights = nn.functional.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "        return attn_weights @ values\n"
        ),
    ),
    Mutation(
        id="mha_scale_q_and_k_quarter_power",
        step="multihead_attention",
        cause="queries and keys each multiplied by head_dim ** -0.25",
        source="https://github.com/openai/guided-diffusion/issues/38",
        find=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
        ),
        replace=(
            "        scale = self.head_dim**-0.25\n"
            "        attn_scores = (queries * scale) @ (keys * scale).transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores, dim=-1)\n"
        ),
    ),
    Mutation(
        id="mha_reshape_merge",
        step="multihead_attention",
        cause="heads merged with transpose(1, 2).reshape(...) instead of contiguous().view(...)",
        source=f"{RASBT}/blob/main/ch03/02_bonus_efficient-multihead-attention",
        find="        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n",
        replace="        context = (attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)\n",
    ),
    Mutation(
        id="mha_sdpa_explicit_keep_mask",
        step="multihead_attention",
        cause="scaled_dot_product_attention with the inverted chapter mask as a keep-mask",
        source=f"{RASBT}/issues/1061",
        find=(
            "        attn_scores = queries @ keys.transpose(2, 3)\n"
            "        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
            "        attn_weights = self.dropout(attn_weights)\n"
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
            "        context = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
        ),
        replace=(
            "        keep = ~self.mask.bool()[:num_tokens, :num_tokens]\n"
            "        context = nn.functional.scaled_dot_product_attention(\n"
            "            queries, keys, values, attn_mask=keep, dropout_p=self.dropout.p if self.training else 0.0\n"
            "        )\n"
            "\n"
            "        # (b, heads, n, head_dim) -> (b, n, heads, head_dim) -> (b, n, d_out)\n"
            "        context = context.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)\n"
        ),
    ),
]

VARIANTS = VARIANTS + FRESH_VARIANTS

