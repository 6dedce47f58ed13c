"""The hidden checks' use of the fault model: the probes of grader.check.signatures on the hidden sizes.

The hidden checks compare the student's code with the judge's reference
(`oracle`); when a comparison fails, the probes below look at the same code on
the hidden sizes and the failure names a cause only when exactly one known
fault matches every observation (grader.check.causes.name_cause). The
properties (causality, batch independence, lengths, dropout) are also checks
of their own here, each failing with its probe's observation.
"""

import weakref

import torch
from .oracle import identity_values, one_hot_tokens, qkv_params, randn

from grader.check.causes import observation
from grader.check.signatures import Battery, init_observation, module_observations, raised
from grader.check.testing import expect_tensor, fail, named_crashes, shape_shown, tolerance

ROLES = ("W_query", "W_key", "W_value")
DEPENDENCE = 0.05  # how much the output must move, relative to its scale, when W_query or W_key changes
_PASSED = weakref.WeakKeyDictionary()  # {student: {key}}: checks already passed in this step (see `once`)


def probe_params(d_in, d_out, n, heads=1, seed=0, out_proj=False):
    """The judge's value-trick parameters: random query/key weights, identity-like values, zero biases (for a
    module built with qkv_bias=True), an identity out_proj."""
    params = qkv_params(d_in, d_out, seed, bias=True)
    params["W_value.weight"] = identity_values(d_in, d_out, n, heads)
    for role in ROLES:
        params[f"{role}.bias"] = torch.zeros(d_out)
    if out_proj:
        params["out_proj.weight"] = torch.eye(d_out)
        params["out_proj.bias"] = torch.zeros(d_out)
    return params


def token_outputs(out, batch, n, probes=None):
    """`out`, a module's answer, as a (batch, n, d_out) tensor: one output for every token of every sequence.
    Otherwise it fails, with the probes' observations when given."""
    out = expect_tensor(out, "the output")
    if out.dim() != 3 or tuple(out.shape[:2]) != (batch, n):
        found = f"the output has shape {shape_shown(out.shape)}, expected ({batch}, {n}, d_out)"
        if probes is None:
            raise AssertionError(found)
        fail(found, probes())
    return out


def read_weights(module, params, batch, n, d_in, heads):
    """The module's attention weights for one-hot tokens, (batch, heads, n, n), read through its output."""
    out = token_outputs(module.forward(one_hot_tokens(batch, n, d_in), weights=params), batch, n)
    b, _, d_out = out.shape
    head_dim = d_out // heads
    return torch.stack([out[:, :, h * head_dim: h * head_dim + n] for h in range(heads)], dim=1)


def large_tokens(batch, n, d_in, seed):
    """Inputs about 40 times the usual, every token of a sequence the same (sequences differ): each row of a head's
    scores is one value of about ±3000, so that no future score outweighs the visible ones (the chapter's "softmax,
    then zero the future and renormalise" stays finite) while exp of it overflows."""
    return randn(batch, 1, d_in, seed=seed, scale=40.0).expand(batch, n, d_in).clone()


def expect_finite_for_large_scores(module, params, x, what, probes):
    """`module`'s output, with `params`, for `x` (large_tokens): torch.softmax keeps every weight finite (it
    subtracts each row's largest score first); exp(scores) / sum overflows to inf / inf = NaN (the chapter's naive
    softmax, which it warns against). Only finiteness is asked: the output's shape and values are the other
    checks' business."""
    with named_crashes(probes):
        out = module.forward(x, weights=params)
    if isinstance(out, torch.Tensor) and out.is_floating_point() and not bool(torch.isfinite(out.double()).all()):
        fail(f"{what} for inputs about 40 times the usual, each sequence one token repeated (attention scores of "
             "about ±3000) hold NaN or inf, where softmax(scores / sqrt(d_k)) keeps every weight finite",
             [observation("cause", "softmax_overflow")])


def prober(student, name, dims, causal=True, dropout=False):
    """A lazy `probes` argument for expect_close: the module's observations, computed once if asked."""
    found = []

    def probes():
        if not found:
            found.append(module_observations(student, name, dims, causal=causal, dropout=dropout))
        return found[0]

    return probes


def check_draws(got, d_in, d_out, seed, what):
    """`got` ({role: tensor}) must be three torch.rand(d_in, d_out) draws in the order query, key, value
    right after torch.manual_seed(seed)."""
    for role in ROLES:
        expect_tensor(got.get(role), f"{what}{role}")
    seen = init_observation(got, d_in, d_out, seed)
    if seen and seen[0]["outcome"] != "ok":
        fail(f"{what}W_query, W_key, W_value are not three torch.rand(d_in, d_out) draws made in the order query, "
             "key, value right after the caller's torch.manual_seed", seen)


def check_module_dropout(student, name, dims, p=0.3):
    """Eval mode is deterministic; in training mode dropout drops a share p of the attention weights, scales
    the survivors by 1/(1-p), draws its mask for every weight of every sequence and head, and acts on the
    attention weights, not on the values or the output."""
    battery = Battery(student, name, dims)
    with named_crashes(lambda: module_observations(student, name, dims, dropout=True)):
        battery.dropout_behaviour(p=p)
        if battery.crashes:
            raise battery.crashes[0]
    wrong = [item for item in battery.observations if item["probe"] != "cause" and item["outcome"] != "ok"]
    if wrong:
        what = {"eval": "two forward passes in eval mode differ",
                "rate": f"in training mode with dropout={p} the share of attention weights dropped is not {p}",
                "rescale": "in training mode the surviving attention weights are not the eval-mode weights times "
                           "1/(1-p)",
                "layout": "the dropped attention weights are not drawn independently",
                "target": "in training mode dropout does not act on the attention weights alone",
                "value_path": "the values do not come from W_value alone, so the attention weights cannot be "
                              "read through them"}
        fail(f"{name}: " + what.get(wrong[0]["probe"], "dropout does not behave as nn.Dropout on the attention "
                                    "weights"), battery.observations + module_observations(student, name, dims))
    if not any(item["probe"] == "rate" for item in battery.observations):
        # Nothing to read in training mode (its output is not attention weights @ values): no dropout was seen.
        fail(f"{name}: in training mode the output is not the attention weights (dropped by dropout={p}) times "
             "the values; apply self.dropout to attn_weights and return attn_weights @ values",
             battery.observations + module_observations(student, name, dims))


def check_lengths(module, lengths, reference, make_input, what, device, suspects, probes):
    """The module must match `reference` for every length, longest (context_length) first."""
    from grader.check.testing import expect_close

    ordered = sorted(lengths, reverse=True)
    inputs = [make_input(n) for n in ordered]
    outs = module.forward_each([((x,), False, None) for x in inputs])  # one round trip; errors met in order
    for n, x, out in zip(ordered, inputs, outs):
        with named_crashes(probes):
            out = raised(out)
        expect_close(out, reference(x), f"{what} for {n} token(s) (context_length={max(lengths)})", device=device,
                     suspects=suspects(x), probes=probes)


def causal_leak(module, x, device):
    """Whether changing tokens t+1.. changes the output of token t or earlier, for some t."""
    b, n, _ = x.shape
    inputs = [(x,)]
    for t in range(n - 1):
        perturbed = x.clone()
        perturbed[:, t + 1:] += randn(b, n - t - 1, x.shape[-1], seed=7 + t)
        inputs.append((perturbed,))
    first, *outs = module.forward_many(inputs)  # one round trip
    base = expect_tensor(first, "the output")
    for t, out in enumerate(outs):
        out = expect_tensor(out, "the output", shape=tuple(base.shape))
        if not torch.allclose(out[:, : t + 1], base[:, : t + 1], atol=tolerance(device)[0]):
            return t
    return None


def batch_mixed(module, x, device):
    changed = x.clone()
    changed[1] = randn(*x.shape[1:], seed=10)
    first, out = module.forward_many([(x,), (changed,)])
    base = expect_tensor(first, "the output")
    out = expect_tensor(out, "the output", shape=tuple(base.shape))
    others = [i for i in range(x.shape[0]) if i != 1]
    return not torch.allclose(out[others], base[others], atol=tolerance(device)[0])


def once(student, key, check):
    """Run `check()` unless it already passed for this student and key. A Student lives for one step of one
    submission, so a precondition that several checks of a step share (the attention uses the queries and
    keys) costs its round trips once; a failure is not remembered, so each check that needs it fails alike."""
    passed = _PASSED.setdefault(student, set())
    if key not in passed:
        check()
        passed.add(key)


def expect_attention_from_queries_and_keys(outputs_of, params, x, device, probes=None):
    """The properties below (causality, batch independence, rows summing to one) also hold for code that
    computes no attention: a causal average of the values, or each token's own projections. They earn points
    only for attention: eval mode, several tokens,
    * changing W_query, then W_key, changes the output (the weights come from the queries and keys);
    * changing one token changes another token's output (each output mixes the visible tokens' values).
    `outputs_of(runs)`: the outputs of fresh modules for (weights, inputs) pairs (Student.outputs_of, one
    round trip)."""
    roles = ("W_query", "W_key")
    runs = [(params, x)]
    for role in roles:
        changed = dict(params)
        changed[f"{role}.weight"] = params[f"{role}.weight"].flip(0) * 2.0
        runs.append((changed, x))
    for token in (0, x.shape[1] - 1):
        other = x.clone()
        other[:, token] = randn(x.shape[0], x.shape[2], seed=15 + token)
        runs.append((params, other))
    first, *others = outputs_of([(weights, (inputs,)) for weights, inputs in runs])
    base = token_outputs(first, x.shape[0], x.shape[1], probes or (lambda: []))
    *moved, first_changed, last_changed = [expect_tensor(out, "the output", shape=tuple(base.shape))
                                                  for out in others]
    # Real attention moves by tens of percent here (measured: >= 20 % of the output's scale); a dependence
    # added under the tolerances to pass these checks is far below 5 %.
    scale = DEPENDENCE * base.abs().max()
    for role, out in zip(roles, moved):
        if (out - base).abs().max() <= scale:
            fail(f"changing {role}'s weights does not change the output: the attention weights must be "
                 f"softmax(queries @ keys^T / sqrt(d_k)), computed from {role}(x); this property counts once "
                 "they are", probes() if probes else [])
    mixed = max((first_changed - base)[:, 1:].abs().max(), (last_changed - base)[:, :-1].abs().max())
    if mixed <= scale:
        fail("changing one token's input changes no other token's output: attention mixes the tokens (each "
             "output is a weighted sum of the values of the tokens it may see); this property counts once it "
             "does", probes() if probes else [])
