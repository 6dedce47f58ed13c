"""Public checks' inputs at grading: moved for each submission, so that a table of the public answers earns nothing.

The public checks ship with the student release, inputs and all, so a submission could answer them from a table
without any of the work (red team 2: 38 points of 100). At grading, every seed a public check draws from (the
judge's inputs, the weights the student's modules are built with, the seeds of the student's calls, and the
models of those draws the diagnosis compares with) is moved by one number, the submission's `shift`: taken from
the submission's bytes and the hidden tests, which students never see: one of `SHIFTS` numbers that only the
hidden tests' bytes determine. The same file gets the same inputs each time it is graded; another file (a
resubmission) gets others but once in `SHIFTS` tries, so a shift one submission learnt from its feedback is
worth little to the next. The chapter's printouts (`graded(..., book=True)`) keep the chapter's seeds: their
values are printed in the chapter anyway. A student's own run of the checks uses shift 0: the shipped inputs.

Seeds a submission hard-codes (a torch.manual_seed(123) inside its function, which the diagnosis searches for)
are the submission's, not the check's: they are never moved.
"""

import contextlib
import contextvars
import hashlib

import torch

_SHIFT = contextvars.ContextVar("public_inputs_shift", default=0)
SHIFT_RANGE = 1 << 24  # a seed plus a shift stays a valid torch seed
# A submission's shift is one of this many, all drawn from the secret: the judge learns a plan of each step's
# requests once per shift (check.student.Plans: one round trip instead of ~15 per step), and a resubmission
# lands on the shift its predecessor learnt only once in this many tries.
SHIFTS = 64


def seed(value):
    """`value`, a seed the check chose, as the check running now uses it (None stays None)."""
    return value if value is None else value + _SHIFT.get()


def generator(value):
    """A torch.Generator seeded with the check's seed `value` (moved as `seed` moves it)."""
    return torch.Generator().manual_seed(seed(value))


def size(shipped, low, high):
    """A size the check chose: `shipped` in the student's own run, another of low..high at grading (for a check
    whose only input is a size, where moving a seed would change nothing)."""
    shift = _SHIFT.get()
    others = [value for value in range(low, high + 1) if value != shipped]
    return shipped if shift == 0 else others[shift % len(others)]


@contextlib.contextmanager
def shifted(shift):
    """Run the block's seeds moved by `shift` (a public check at grading), then put them back."""
    token = _SHIFT.set(shift)
    try:
        yield
    finally:
        _SHIFT.reset(token)


def shift_for(submission, secret):
    """The shift of a submission's bytes under `secret` (the hidden tests' bytes): 0 without a secret."""
    if not secret:
        return 0
    key = hashlib.sha256(secret).digest()
    which = int.from_bytes(hashlib.sha256(key + submission).digest()[:8], "big") % SHIFTS
    return 1 + int.from_bytes(hashlib.sha256(key + b"shift %d" % which).digest()[:8], "big") % (SHIFT_RANGE - 1)
