"""Probes that read a module's attention weights through its outputs (the value trick).

With token i = e_i and W_value mapping e_j to e_j inside each head, the
context vector of token i *is* row i of that head's attention weights, so the
judge can check row sums, the causal pattern and dropout on the weights
themselves without looking inside the student's module.
"""

import torch
from oracle import identity_values, linear, one_hot_tokens, qkv_params, randn, split_heads, weights_of

from grader.testing import expect_tensor, tolerance


def probe_params(d_in, d_out, n, heads=1, seed=0, out_proj=False):
    """Random query/key weights, identity-like values, zero biases (needs qkv_bias=True)."""
    params = qkv_params(d_in, d_out, seed, bias=True)
    params["W_value.weight"] = identity_values(d_in, d_out, n, heads)
    for role in ("W_query", "W_key", "W_value"):
        params[f"{role}.bias"] = torch.zeros(d_out)
    if out_proj:
        params["out_proj.weight"] = torch.eye(d_out)
        params["out_proj.bias"] = torch.zeros(d_out)
    return params


def ones_value_params(d_in, d_out, seed=0, out_proj=False):
    """Random query/key weights and values that are all ones (W_value = 0, bias = 1)."""
    params = probe_params(d_in, d_out, 1, seed=seed, out_proj=out_proj)
    params["W_value.weight"] = torch.zeros(d_out, d_in)
    params["W_value.bias"] = torch.ones(d_out)
    return params


def dropout_hits_weights(out, heads):
    """With all-ones values, dropout on the weights gives equal features within each head;
    dropout on the context vectors (or the output) does not."""
    b, n, d_out = out.shape
    blocks = out.reshape(b, n, heads, d_out // heads)
    return bool((blocks - blocks[..., :1]).abs().max() < 1e-5)


def probe_weights(module, params, batch, n, d_in, d_out, heads=1, train=False, seed=None):
    """(student weights, reference weights), each (batch, heads, n, n)."""
    x = one_hot_tokens(batch, n, d_in)
    module.load(params)
    out = module.forward(x, train=train, seed=seed)
    return out, reference_weights(x, params, heads)


def weights_from_output(out, n, heads):
    """Cut a (b, n, d_out) probe output into per-head (b, heads, n, n) weights."""
    b, _, d_out = out.shape
    head_dim = d_out // heads
    return torch.stack([out[:, :, h * head_dim: h * head_dim + n] for h in range(heads)], dim=1)


def reference_weights(x, params, heads):
    queries, keys = linear(x, params, "W_query"), linear(x, params, "W_key")
    if heads > 1:
        queries, keys = split_heads(queries, heads), split_heads(keys, heads)
    else:
        queries, keys = queries.unsqueeze(1), keys.unsqueeze(1)
    return weights_of(queries @ keys.transpose(-2, -1), keys.shape[-1])


def check_causal(module, x, what, device, advice):
    """Perturb tokens t+1.. for every t: the outputs of tokens 0..t must not move."""
    b, n, _ = x.shape
    base = expect_tensor(module.forward(x), what)
    for t in range(n - 1):
        perturbed = x.clone()
        perturbed[:, t + 1:] += randn(b, n - t - 1, x.shape[-1], seed=7 + t)
        out = expect_tensor(module.forward(perturbed), what, shape=tuple(base.shape))
        if not torch.allclose(out[:, : t + 1], base[:, : t + 1], atol=tolerance(device)[0]):
            raise AssertionError(f"changing tokens {t + 1}.. changed the output of token {t} or earlier: "
                                 f"information leaks from the future; {advice}")


def check_batch_independent(module, x, what, device, advice):
    """Replace sequence 1 of the batch: the outputs of the other sequences must not move."""
    base = expect_tensor(module.forward(x), what)
    changed = x.clone()
    changed[1] = randn(*x.shape[1:], seed=10)
    out = expect_tensor(module.forward(changed), what, shape=tuple(base.shape))
    others = [i for i in range(x.shape[0]) if i != 1]
    assert torch.allclose(out[others], base[others], atol=tolerance(device)[0]), (
        f"changing sequence 1 of the batch changed the outputs of the other sequences: {advice}")
