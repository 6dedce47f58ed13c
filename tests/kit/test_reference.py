"""The reference solution reproduces the chapter, and the judge's oracle agrees with it."""

import importlib.util

import pytest
import torch
from grader.check.book import (BOOK_ATOL, CAUSAL_SEED123, INPUTS_3D, INPUTS_3D_SEED100, INPUTS_8D, MHA_SEED123,
                          SA_V1_SEED100, SA_V2_8D_SEED789, SA_V2_SEED100, SA_V2_SEED789, SEED100_QUERY_2,
                          SEED100_WEIGHTS, SEED123_8D_CONTEXT, SEED123_8D_SCORES, SEED123_8D_WEIGHTS,
                          SEED123_CONTEXT_2, SEED123_QUERY_2, SEED123_SCORES_2, SEED123_WEIGHTS_2,
                          SEED789_MASKED_WEIGHTS, SEED789_WEIGHTS, WRAPPER_SEED123, book_batch)
from ..hidden.oracle import linear_attention, multihead, qkv_params, randn, self_attention

from grader.build.exercises import SOLUTION


@pytest.fixture(scope="module")
def ref():
    spec = importlib.util.spec_from_file_location("reference_solution", SOLUTION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def close(actual, printed):
    assert torch.allclose(actual.detach().float(), printed, atol=BOOK_ATOL), actual


def test_step_by_step_numbers(ref):
    torch.manual_seed(100)
    weights = ref.init_qkv_weights(3, 2)
    for W, printed in zip(weights, SEED100_WEIGHTS):
        close(W, printed)
    close(ref.project(INPUTS_3D_SEED100, *weights)[0][1], SEED100_QUERY_2)
    torch.manual_seed(123)
    queries, keys, values = ref.project(INPUTS_3D, *ref.init_qkv_weights(3, 2))
    close(queries[1], SEED123_QUERY_2)
    scores = ref.attention_scores(queries, keys)
    close(scores[1], SEED123_SCORES_2)
    attn = ref.scaled_attention_weights(scores, 2)
    close(attn[1], SEED123_WEIGHTS_2)
    close(ref.context_vectors(attn, values)[1], SEED123_CONTEXT_2)
    torch.manual_seed(123)
    queries, keys, values = ref.project(INPUTS_8D, *ref.init_qkv_weights(8, 4))
    scores = ref.attention_scores(queries, keys)
    close(scores, SEED123_8D_SCORES)
    attn = ref.scaled_attention_weights(scores, 4)
    close(attn, SEED123_8D_WEIGHTS)
    close(ref.context_vectors(attn, values), SEED123_8D_CONTEXT)


def test_modules_reproduce_the_chapter(ref):
    for cls, args, seed, inputs, printed in (
        (ref.SelfAttention_v1, (3, 2), 100, INPUTS_3D_SEED100, SA_V1_SEED100),
        (ref.SelfAttention_v1, (8, 4), 123, INPUTS_8D, SEED123_8D_CONTEXT),
        (ref.SelfAttention_v2, (3, 2), 789, INPUTS_3D, SA_V2_SEED789),
        (ref.SelfAttention_v2, (3, 2), 100, INPUTS_3D_SEED100, SA_V2_SEED100),
        (ref.SelfAttention_v2, (8, 4), 789, INPUTS_8D, SA_V2_8D_SEED789),
        (ref.CausalAttention, (3, 2, 6, 0.0), 123, book_batch(), CAUSAL_SEED123.expand(2, 6, 2)),
        (ref.MultiHeadAttentionWrapper, (3, 2, 6, 0.0, 2), 123, book_batch(), WRAPPER_SEED123.expand(2, 6, 4)),
        (ref.MultiHeadAttention, (3, 2, 6, 0.0, 2), 123, book_batch(), MHA_SEED123.expand(2, 6, 2)),
    ):
        torch.manual_seed(seed)
        close(cls(*args)(inputs), printed)


def test_masking_numbers(ref):
    close(ref.mask_and_renormalize(SEED789_WEIGHTS), SEED789_MASKED_WEIGHTS)
    torch.manual_seed(789)
    sa = ref.SelfAttention_v2(3, 2)
    scores = sa.W_query(INPUTS_3D) @ sa.W_key(INPUTS_3D).T
    close(ref.causal_attention_weights(scores, 2), SEED789_MASKED_WEIGHTS)
    close(ref.mask_and_renormalize(ref.scaled_attention_weights(scores, 2)), SEED789_MASKED_WEIGHTS)


def load(module, params):
    with torch.no_grad():
        for name, value in params.items():
            module.get_parameter(name).copy_(value)
    return module.eval()


def test_oracle_agrees_with_the_solution(ref):
    x = randn(3, 5, 6, seed=1)
    params = qkv_params(6, 4, seed=2, bias=True)
    module = load(ref.CausalAttention(6, 4, 7, 0.5, qkv_bias=True), params)
    assert torch.allclose(module(x).double(), linear_attention(x, params, causal=True), atol=1e-6)
    params = qkv_params(6, 8, seed=3)
    params.update({"out_proj.weight": randn(8, 8, seed=4), "out_proj.bias": randn(8, seed=5)})
    module = load(ref.MultiHeadAttention(6, 8, 7, 0.5, 2), params)
    assert torch.allclose(module(x).double(), multihead(x, params, 2), atol=1e-6)
    Ws = [randn(6, 4, seed=s) for s in (6, 7, 8)]
    module = ref.SelfAttention_v1(6, 4)
    load(module, dict(zip(("W_query", "W_key", "W_value"), Ws)))
    assert torch.allclose(module(x[0]).double(), self_attention(x[0], *Ws), atol=1e-6)
