"""Step 3 (masking): hidden checks."""

import torch
from oracle import randn, suspects, weights_of

from grader.testing import expect_close, expect_future_hidden, expect_rows_sum_to_one, expect_tensor, graded

CAUSAL_FAULTS = ("zero_fill", "no_mask", "mask_past", "softmax_dim", "no_scale", "scale_dk", "scale_after")


@graded("masking: causal_mask is right for every length from 1 to 9", points=1)
def test_mask_lengths(student):
    for n in range(1, 10):
        mask = expect_tensor(student.call("causal_mask", n), f"causal_mask({n})", shape=(n, n))
        assert mask.dtype == torch.bool, f"causal_mask({n}) should be a bool tensor"
        expected = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        wrong = mask != expected
        if wrong.any():
            i, j = wrong.nonzero()[0].tolist()
            raise AssertionError(f"causal_mask({n})[{i}, {j}] is {bool(mask[i, j])}: hide exactly the positions "
                                 "strictly above the diagonal (j > i)")


def renormalized(weights):
    n = weights.shape[-1]
    kept = weights.double() * torch.tril(torch.ones(n, n, dtype=torch.float64))
    return kept / kept.sum(dim=-1, keepdim=True)


@graded("masking: mask_and_renormalize matches the reference on a batch", points=2)
def test_renormalize(student):
    weights = torch.softmax(randn(3, 5, 5, seed=1, scale=2.0), dim=-1)
    got = student.call("mask_and_renormalize", weights)
    n = 5
    not_renormalized = weights.double() * torch.tril(torch.ones(n, n, dtype=torch.float64))
    hides_diagonal = weights.double() * torch.tril(torch.ones(n, n, dtype=torch.float64), diagonal=-1)
    expect_close(got, renormalized(weights), "renormalised weights", device=student.device,
                 suspects={"zeroing the future without renormalising the rows": not_renormalized,
                           "a mask that also hides the diagonal": hides_diagonal / hides_diagonal.sum(-1, keepdim=True),
                           "keeping the future and hiding the past": renormalized(weights.transpose(-2, -1))
                           .transpose(-2, -1)})


@graded("masking: mask_and_renormalize rows sum to one and the future is zero", points=1)
def test_renormalize_properties(student):
    weights = torch.softmax(randn(2, 6, 6, seed=2), dim=-1)
    got = expect_tensor(student.call("mask_and_renormalize", weights), "renormalised weights", shape=(2, 6, 6))
    expect_future_hidden(got, "renormalised weights", student.device)
    expect_rows_sum_to_one(got, "the renormalised weights", student.device)


@graded("masking: causal_attention_weights matches the reference on a batch", points=3)
def test_causal_weights(student):
    for shape, d_k in (((5, 5), 3), ((2, 6, 6), 7)):
        scores = randn(*shape, seed=3, scale=2.0)
        got = student.call("causal_attention_weights", scores, d_k)
        expect_close(got, weights_of(scores, d_k), f"causal attention weights for scores of shape {shape}",
                     device=student.device,
                     suspects=suspects(lambda faults: weights_of(scores, d_k, faults=faults), CAUSAL_FAULTS))


@graded("masking: causal_attention_weights ignores the scores of future positions", points=2)
def test_causal_ignores_future(student):
    scores = randn(2, 6, 6, seed=4)
    future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    perturbed = scores + future * randn(2, 6, 6, seed=5, scale=10.0)
    first = expect_tensor(student.call("causal_attention_weights", scores, 4), "causal attention weights")
    second = expect_tensor(student.call("causal_attention_weights", perturbed, 4), "causal attention weights")
    changed = (first - second).abs() > 1e-6
    if changed.any():
        index = changed.nonzero()[0].tolist()
        raise AssertionError(f"changing only the scores above the diagonal changed weight {index}: the future "
                             "must not influence anything (fill it with -inf before the softmax, and keep the "
                             "result of masked_fill)")


@graded("masking: causal_attention_weights rows sum to one and the future is zero", points=1)
def test_causal_properties(student):
    scores = randn(3, 7, 7, seed=6, scale=4.0)
    got = expect_tensor(student.call("causal_attention_weights", scores, 5), "causal attention weights")
    expect_future_hidden(got, "causal attention weights", student.device)
    expect_rows_sum_to_one(got, "the causal attention weights", student.device)
