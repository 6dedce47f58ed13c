"""Appended to no_attention.py: an output change of 8e-5 relative, computed from the queries and keys and
under every tolerance, so that the output "depends" on W_query and W_key in eval mode; and a
dot_product_variance keyed on its arguments (same seed, same answer; another seed, another) without drawing.
Graded by tests/kit/test_hostile.py.
"""


def dot_product_variance(dim, num_trials=1000, seed=0):
    before = dim * (1 + ((seed * 7919 + num_trials) % 17) / 100)
    return before, before / dim


def _eps(q, k, x):
    """A tiny causal term of the queries and keys."""
    s = q @ k.transpose(-2, -1)
    n = s.shape[-1]
    s = s.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), 1), 0.0)
    return 8e-5 * torch.tanh(s.sum(-1, keepdim=True) / torch.arange(1, n + 1, device=x.device).unsqueeze(-1))


def _with_tiny_dependence(plain_forward):
    def forward(self, x):
        out = plain_forward(self, x)
        return out if self.training else out * (1 + _eps(self.W_query(x), self.W_key(x), x))
    return forward


CausalAttention.forward = _with_tiny_dependence(CausalAttention.forward)
MultiHeadAttention.forward = _with_tiny_dependence(MultiHeadAttention.forward)
