# Red team 3 (session 39, blind): not yet a regression test; see the session's closing note. Graded alone:
# its public errors show torch.initial_seed(), the grading shift
import torch
from torch import nn
def init_qkv_weights(d_in, d_out):
    raise RuntimeError(f"LEAK seed={torch.initial_seed()} d=({d_in},{d_out})")
