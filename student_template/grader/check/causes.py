"""The known mistakes of the chapter: what is wrong, in the chapter's words, and what to do.

A check that recognises a mistake names it by key (`testing.Failure(cause=...)`);
the feedback and the student's own checker print its title and fix. Nothing here
knows a hidden expected value, so it ships to students with the checker.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Cause:
    key: str
    title: str  # what is wrong, as the chapter would say it
    fix: str  # what to do about it


CAUSES = {cause.key: cause for cause in (
    # projection
    Cause("qkv_order", "W_query, W_key and W_value are drawn or returned in the wrong order",
          "right after the seed, draw W_query, then W_key, then W_value, and return them in that order"),
    Cause("randn_init", "the weights are drawn with torch.randn instead of torch.rand",
          "the chapter initialises them with torch.rand (uniform in [0, 1))"),
    Cause("weight_shape", "the weight matrices have shape (d_out, d_in) instead of (d_in, d_out)",
          "create them as torch.rand(d_in, d_out), so that x @ W maps d_in features to d_out"),
    Cause("qk_swapped", "queries and keys are swapped",
          "queries = x @ W_query and keys = x @ W_key, returned as (queries, keys, values)"),
    Cause("projection_mixup", "a projection uses another projection's weight matrix",
          "queries use W_query, keys W_key, values W_value"),
    Cause("weight_transposed", "the projection multiplies by W.T instead of W",
          "with W of shape (d_in, d_out) the projection is x @ W (W.T is the nn.Linear convention)"),
    # scaling
    Cause("scores_kq", "the scores are keys @ queries^T, the transpose of the score matrix",
          "scores[i, j] is query i · key j: queries @ keys.transpose(-2, -1)"),
    Cause("softmax_dim", "the softmax is taken over the wrong axis (each column sums to one instead of each row)",
          "normalise each row of scores: softmax(..., dim=-1)"),
    Cause("no_scale", "the scaling is missing: softmax of the raw scores",
          "divide the scores by sqrt(d_k) before the softmax"),
    Cause("scale_dk", "the scores are divided by d_k instead of sqrt(d_k)",
          "divide by d_k**0.5"),
    Cause("scale_after", "the scaling is applied after the softmax, so the rows no longer sum to one",
          "divide the scores, not the weights, by sqrt(d_k), before the softmax"),
    Cause("scale_d_in", "the scores are scaled by sqrt(d_in), the wrong dimension",
          "d_k is the size of each key vector: keys.shape[-1]"),
    Cause("scale_d_out", "the scores are scaled by sqrt(d_out) instead of sqrt(head_dim)",
          "in multi-head attention each head's keys have head_dim features: divide by head_dim**0.5"),
    Cause("context_transposed", "the context vectors use the transposed attention weights",
          "context vector i is sum_j weights[i, j] * values[j]: attn_weights @ values"),
    Cause("variance_over_dim", "the dot products are divided by dim instead of sqrt(dim)",
          "dividing q·k by sqrt(dim) divides its variance by dim"),
    Cause("variance_not_recomputed", "the variance is divided by sqrt(dim) instead of measured on the scaled "
          "dot products", "compute (dots / sqrt(dim)).var(): scaling by sqrt(dim) divides the variance by dim"),
    Cause("variance_not_seeded", "dot_product_variance ignores its seed, so its result is not reproducible",
          "draw q and k after torch.manual_seed(seed) (or from a torch.Generator seeded with it)"),
    Cause("variance_uniform", "q and k are drawn with torch.rand (uniform) instead of torch.randn",
          "the variance argument needs standard-normal q and k: torch.randn"),
    # masking
    Cause("mask_hides_diagonal", "the mask hides the diagonal: a token cannot see itself, and the first "
          "token sees nothing (its row becomes NaN)", "hide only j > i: torch.triu(..., diagonal=1)"),
    Cause("mask_past", "the mask hides the past instead of the future (tril instead of triu, or a missing ~)",
          "token i may see positions j <= i: hide torch.triu(..., diagonal=1)"),
    Cause("zero_fill", "the masked scores are filled with 0 instead of -inf, so the future still gets weight",
          "fill the hidden scores with -torch.inf before the softmax"),
    Cause("no_mask", "the causal mask has no effect: the result of masked_fill is thrown away",
          "use masked_fill_ (in place) or assign the result: scores = scores.masked_fill(...)"),
    Cause("not_renormalised", "the rows are not renormalised after the future is zeroed",
          "divide each row by its sum (keepdim=True), or fill with -inf before the softmax"),
    Cause("keepdim_missing", "the row sums are taken without keepdim=True, so they divide along the wrong axis",
          "masked / masked.sum(dim=-1, keepdim=True)"),
    # dropout
    Cause("dropout_no_rescale", "dropout does not rescale the surviving weights",
          "multiply the survivors by 1/(1-p) so that the expected value is unchanged"),
    Cause("dropout_rescale_by_p", "dropout divides the survivors by p instead of (1-p)",
          "scale the survivors by 1/(1-p)"),
    Cause("dropout_scaled_down", "dropout multiplies the survivors by (1-p) instead of dividing by it",
          "scale the survivors by 1/(1-p)"),
    Cause("dropout_keep_probability", "dropout takes p as the probability of keeping a weight",
          "p is the probability of dropping: keep a weight when rand >= p"),
    Cause("dropout_same_mask", "dropout reuses the same mask on every call (a fixed seed inside?)",
          "draw a fresh random mask on every call; do not seed inside the function"),
    Cause("dropout_mask_shape", "the dropout mask does not have the full shape of the weights (whole rows or "
          "columns are dropped together)", "draw the mask with the shape of the weights: torch.rand_like(weights)"),
    Cause("dropout_in_eval", "dropout is active in evaluation mode",
          "only drop while training: return the weights unchanged when training is False"),
    # causal_attention
    Cause("mask_not_sliced", "the mask is not sliced to the sequence length",
          "use self.mask[:num_tokens, :num_tokens] for inputs shorter than context_length"),
    Cause("mask_not_buffer", "the mask is not a registered buffer, so it does not move with the module",
          "self.register_buffer('mask', torch.triu(...)) instead of a plain attribute"),
    Cause("dropout_before_softmax", "dropout is applied to the scores before the softmax (0 x -inf gives NaN)",
          "apply self.dropout to the attention weights, after the softmax"),
    Cause("dropout_not_applied", "the dropout module is never applied to the attention weights",
          "pass the attention weights through self.dropout right after the softmax"),
    Cause("dropout_on_context", "dropout acts on the context vectors or the output, not on the attention weights",
          "apply self.dropout to attn_weights, before attn_weights @ values"),
    Cause("qkv_bias_ignored", "qkv_bias is ignored: the projections have no bias",
          "nn.Linear(d_in, d_out, bias=qkv_bias)"),
    Cause("keys_transpose", "the keys are transposed on the wrong axes (keys.T on a batch reverses every axis)",
          "transpose the last two axes: keys.transpose(-2, -1)"),
    # mha_wrapper
    Cause("heads_shared", "the heads share one module: [CausalAttention(...)] * num_heads repeats one object",
          "create a new CausalAttention for each head"),
    Cause("heads_not_modulelist", "the heads are kept in a plain Python list, not an nn.ModuleList",
          "wrap the list of heads in nn.ModuleList so that PyTorch sees their parameters"),
    Cause("concat_tokens", "the heads are concatenated along the token axis (dim=1)",
          "concatenate along the feature axis: torch.cat(..., dim=-1)"),
    Cause("concat_batch", "the heads are concatenated along the batch axis (dim=0)",
          "concatenate along the feature axis: torch.cat(..., dim=-1)"),
    Cause("first_head_only", "only one head's output is used",
          "concatenate the outputs of all heads: torch.cat([head(x) for head in self.heads], dim=-1)"),
    Cause("heads_reversed", "the heads are concatenated in reverse order",
          "keep the heads' order: head 0 first"),
    Cause("qkv_bias_not_passed", "qkv_bias is not passed on to the heads",
          "give each head the wrapper's qkv_bias argument too"),
    Cause("dropout_not_passed", "the dropout rate is not passed on to the heads",
          "give each head the wrapper's dropout rate too"),
    # multihead_attention
    Cause("split_no_transpose", "the heads are split with view(b, num_heads, n, head_dim) without the transpose",
          "view(b, n, num_heads, head_dim), then transpose(1, 2)"),
    Cause("merge_no_transpose", "the heads are merged back without transposing (1, 2) first",
          "context.transpose(1, 2).contiguous().view(b, n, d_out)"),
    Cause("view_not_contiguous", "view is called on a transposed tensor without .contiguous()",
          "call .contiguous() before .view(...), or use .reshape(...)"),
    Cause("no_out_proj", "out_proj is skipped", "apply self.out_proj to the merged context vectors last"),
    Cause("out_proj_bias", "out_proj has no bias", "out_proj is nn.Linear(d_out, d_out): it always has a bias"),
    Cause("head_dim_wrong", "head_dim is not d_out // num_heads", "head_dim = d_out // num_heads"),
    Cause("no_divisibility_check", "d_out is not checked to be divisible by num_heads",
          "assert d_out % num_heads == 0 (or raise ValueError) in __init__"),
)}
