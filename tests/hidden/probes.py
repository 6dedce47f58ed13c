"""Probes that read a module's attention weights through its outputs (the value trick).

With token i = e_i and W_value mapping e_j to e_j inside each head, the
context vector of token i *is* row i of that head's attention weights, so the
judge can check row sums, the causal pattern and dropout on the weights
themselves without looking inside the student's module. Also here: the check
that seeded weights are torch.rand draws in the chapter's order, shared by the
projection and SelfAttention_v1 tests.
"""

import torch
from .oracle import identity_values, linear, one_hot_tokens, qkv_params, randn, split_heads, weights_of

from grader.check.student import StudentError
from grader.check.testing import CAUSES, Failure, details_of, expect_close, expect_tensor, seeded, tolerance


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


ROLES = ("W_query", "W_key", "W_value")


def check_draws(got, d_in, d_out, seed, what):
    """`got` ({role: tensor}) must be three torch.rand(d_in, d_out) draws in the order query, key, value
    right after torch.manual_seed(seed); a known wrong way of drawing them is named."""
    with seeded(seed):
        uniform = [torch.rand(d_in, d_out) for _ in ROLES]
    with seeded(seed):
        normal = [torch.randn(d_in, d_out) for _ in ROLES]
    for index, role in enumerate(ROLES):
        value = expect_tensor(got.get(role), f"{what}{role}")
        if tuple(value.shape) == (d_out, d_in) and d_in != d_out:
            raise Failure(f"{what}{role} has shape {tuple(value.shape)}, expected {(d_in, d_out)}: create it as "
                          "torch.rand(d_in, d_out)", cause="weight_shape")
        value = expect_tensor(value, f"{what}{role}", shape=(d_in, d_out)).float()
        if torch.allclose(value, uniform[index]):
            continue
        if torch.allclose(value, normal[index]):
            raise Failure(f"{what}{role} is a torch.randn draw; the chapter draws the weights with torch.rand "
                          "(uniform in [0, 1))", cause="randn_init")
        for other, ordinal in enumerate(("first", "second", "third")):
            if torch.allclose(value, uniform[other]):
                raise Failure(f"{what}{role} is the {ordinal} torch.rand draw; draw W_query first, then W_key, "
                              "then W_value", cause="qkv_order")
        raise AssertionError(f"{what}{role} is not a torch.rand(d_in, d_out) draw made in the order query, key, "
                             "value (right after the caller's torch.manual_seed)")


def check_lengths(module, lengths, reference, make_input, what, device, suspects):
    """The module must match `reference` for every length, longest (context_length) first. A crash
    only on inputs shorter than context_length is the mask not sliced to the number of tokens."""
    longest = max(lengths)
    for n in sorted(lengths, reverse=True):
        x = make_input(n)
        try:
            out = module.forward(x)
        except StudentError as error:
            if n == longest:
                raise
            crash, _, where = str(error).partition("\n")
            raise Failure(f"{what}: {longest} tokens (the full context_length) work, but {n} token(s) raise: "
                          f"{crash}; {CAUSES['mask_not_sliced'].title}; {CAUSES['mask_not_sliced'].fix}"
                          + (f"\n{where}" if where else ""),
                          cause="mask_not_sliced", error=details_of(error).get("error")) from error
        expect_close(out, reference(x), f"{what} for {n} token(s) (context_length={longest})", device=device,
                     advice="slice the mask to the number of tokens: mask[:num_tokens, :num_tokens]",
                     suspects=suspects(x))


def check_module_dropout(module, params, p, batch, n, d_in, heads, seed, rate_tolerance, what):
    """Eval mode is deterministic; in training mode dropout drops a share p of the visible attention
    weights and scales the survivors by 1/(1-p). Read through the value trick (`params`: probe_params)."""
    x = one_hot_tokens(batch, n, d_in)
    module.load(params)
    first, again = module.forward(x), module.forward(x)
    first = expect_tensor(first, f"{what} output in eval mode")
    if not torch.equal(first, expect_tensor(again, f"{what} output in eval mode")):
        raise Failure("two forward passes in eval mode differ: dropout must be inactive in eval mode (use "
                      "self.dropout, an nn.Dropout, which follows module.train()/eval())", cause="dropout_in_eval")
    trained = module.forward(x, train=True, seed=seed)
    if isinstance(trained, torch.Tensor) and torch.isnan(trained.double()).any():
        raise Failure(f"{what} output in training mode contains NaN while eval mode is fine: "
                      f"{CAUSES['dropout_before_softmax'].title}; {CAUSES['dropout_before_softmax'].fix}",
                      cause="dropout_before_softmax")
    trained = weights_from_output(expect_tensor(trained, f"{what} output in training mode"), n, heads)
    eval_weights = weights_from_output(first, n, heads)
    visible = torch.tril(torch.ones(n, n, dtype=torch.bool)).expand_as(trained)
    zero = (trained.abs() < 1e-7) & visible
    rate = zero.sum().item() / visible.sum().item()
    if abs(rate - p) >= rate_tolerance:
        keeps = abs(rate - (1 - p)) < rate_tolerance
        raise Failure(f"in training mode with dropout={p}, {rate:.0%} of the visible attention weights were "
                      "dropped; " + ("p is the probability of dropping a weight, not of keeping it" if keeps else
                                     "apply self.dropout to the attention weights"),
                      cause="dropout_not_applied" if rate == 0 else "dropout_keep_probability" if keeps else None)
    survivors = visible & ~zero
    if not torch.allclose(trained[survivors], eval_weights[survivors] / (1 - p), rtol=1e-3, atol=1e-5):
        unscaled = torch.allclose(trained[survivors], eval_weights[survivors], rtol=1e-3, atol=1e-5)
        raise Failure("in training mode the surviving attention weights should be the eval-mode weights times "
                      "1/(1-p): " + ("they are not rescaled" if unscaled else "apply dropout to the attention "
                                     "weights after the softmax, before multiplying by the values"),
                      cause="dropout_no_rescale" if unscaled else None)
