"""Inputs and printed results from the chapter, used by the book-reproduction tests.

Printed values have four decimals, so comparisons against them use BOOK_ATOL.
"""

import torch

from grader.check.testing import expect_tensor, seeded

BOOK_ATOL = 1.5e-4

# "Your journey starts with one step": six tokens, three features.
INPUTS_3D = torch.tensor(
    [[0.43, 0.15, 0.89],
     [0.55, 0.87, 0.66],
     [0.57, 0.85, 0.64],
     [0.22, 0.58, 0.33],
     [0.77, 0.25, 0.10],
     [0.05, 0.80, 0.55]]
)

# The first-half chapter's own embeddings of the same six words (used with seed 100).
INPUTS_3D_SEED100 = torch.tensor(
    [[0.8938, 0.9003, 0.8978],
     [0.7165, 0.3428, 0.2553],
     [0.1042, 0.5163, 0.3753],
     [0.0445, 0.3091, 0.9763],
     [0.1554, 0.1614, 0.2700],
     [0.8089, 0.9435, 0.5480]]
)
SEED100_QUERY_2 = torch.tensor([0.3427, 0.9429])

# "The next day is bright": five tokens, eight features.
INPUTS_8D = torch.tensor(
    [[0.43, 0.15, 0.89, 0.17, 0.23, 0.19, 0.38, 0.44],
     [0.55, 0.87, 0.66, 0.51, 0.49, 0.3, 0.2, 0.1],
     [0.57, 0.85, 0.64, 0.8, 0.1, 0.4, 0.21, 0.39],
     [0.22, 0.58, 0.33, 0.4, 0.4, 0.4, 0.1, 0.3],
     [0.77, 0.25, 0.10, 0.1, 0.9, 0.3, 0.3, 0.2]]
)

# torch.manual_seed(100); three torch.rand(3, 2) draws in the order query, key, value.
SEED100_WEIGHTS = (
    torch.tensor([[0.1117, 0.8158], [0.2626, 0.4839], [0.6765, 0.7539]]),
    torch.tensor([[0.2627, 0.0428], [0.2080, 0.1180], [0.1217, 0.7356]]),
    torch.tensor([[0.7118, 0.7876], [0.4183, 0.9014], [0.9969, 0.7565]]),
)

# torch.manual_seed(123) weights for the 3-d inputs: query of the second token ("journey").
SEED123_QUERY_2 = torch.tensor([0.4306, 1.4551])
SEED123_SCORES_2 = torch.tensor([1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440])
SEED123_WEIGHTS_2 = torch.tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])
SEED123_CONTEXT_2 = torch.tensor([0.3061, 0.8210])

# torch.manual_seed(123) weights for the 8-d inputs, d_out = 4.
SEED123_8D_SCORES = torch.tensor(
    [[8.7252, 10.8803, 11.0007, 7.7678, 9.7598],
     [9.7351, 12.0370, 12.2923, 8.7149, 10.9628],
     [10.4691, 12.9987, 13.1878, 9.3438, 11.8256],
     [7.7531, 9.6199, 9.7608, 6.9217, 8.7864],
     [8.8185, 10.9612, 11.1314, 7.8699, 9.8633]]
)
SEED123_8D_WEIGHTS = torch.tensor(
    [[0.1069, 0.3140, 0.3335, 0.0662, 0.1793],
     [0.0980, 0.3099, 0.3521, 0.0589, 0.1811],
     [0.0911, 0.3227, 0.3547, 0.0519, 0.1795],
     [0.1162, 0.2954, 0.3170, 0.0767, 0.1947],
     [0.1063, 0.3103, 0.3379, 0.0662, 0.1793]]
)
SEED123_8D_CONTEXT = torch.tensor(
    [[1.3246, 1.5236, 1.8652, 2.3285],
     [1.3301, 1.5304, 1.8753, 2.3433],
     [1.3325, 1.5353, 1.8866, 2.3537],
     [1.3211, 1.5153, 1.8390, 2.3002],
     [1.3253, 1.5242, 1.8657, 2.3304]]
)

# SelfAttention_v1(3, 2) after torch.manual_seed(100), applied to INPUTS_3D_SEED100.
SA_V1_SEED100 = torch.tensor(
    [[1.2705, 1.4457], [1.1783, 1.3425], [1.1593, 1.3236],
     [1.1985, 1.3688], [1.1366, 1.2980], [1.2373, 1.4083]]
)
# SelfAttention_v1(8, 4) after torch.manual_seed(123) on INPUTS_8D is SEED123_8D_CONTEXT.

# SelfAttention_v2(3, 2) after torch.manual_seed(789), applied to INPUTS_3D.
SA_V2_SEED789 = torch.tensor(
    [[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702],
     [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]]
)
# SelfAttention_v2(3, 2) after torch.manual_seed(100), applied to INPUTS_3D_SEED100.
SA_V2_SEED100 = torch.tensor(
    [[0.2303, 0.6761], [0.2381, 0.6888], [0.2268, 0.6639],
     [0.2287, 0.6709], [0.2335, 0.6777], [0.2288, 0.6711]]
)
# SelfAttention_v2(8, 4) after torch.manual_seed(789), applied to INPUTS_8D.
SA_V2_8D_SEED789 = torch.tensor(
    [[0.0174, 0.0553, -0.1093, 0.1026],
     [0.0175, 0.0556, -0.1089, 0.1024],
     [0.0175, 0.0559, -0.1087, 0.1022],
     [0.0179, 0.0544, -0.1091, 0.1028],
     [0.0172, 0.0543, -0.1105, 0.1032]]
)

# Unmasked attention weights of the seed-789 SelfAttention_v2, and the same after
# masking the future and renormalising (they equal the -inf + softmax route).
SEED789_WEIGHTS = torch.tensor(
    [[0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510],
     [0.2041, 0.1659, 0.1662, 0.1496, 0.1665, 0.1477],
     [0.2036, 0.1659, 0.1662, 0.1498, 0.1664, 0.1480],
     [0.1869, 0.1667, 0.1668, 0.1571, 0.1661, 0.1564],
     [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.1585],
     [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]
)
SEED789_MASKED_WEIGHTS = torch.tensor(
    [[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
     [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
     [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
     [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
     [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
     [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]
)
# The visible (lower-triangle) scores of the same model, as printed after masking.
SEED789_SCORES_LOWER = torch.tensor(
    [[0.2899, 0, 0, 0, 0, 0],
     [0.4656, 0.1723, 0, 0, 0, 0],
     [0.4594, 0.1703, 0.1731, 0, 0, 0],
     [0.2642, 0.1024, 0.1036, 0.0186, 0, 0],
     [0.2183, 0.0874, 0.0882, 0.0177, 0.0786, 0],
     [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078]]
)

# CausalAttention(3, 2, 6, 0.0) after torch.manual_seed(123), on a batch of two copies of INPUTS_3D.
CAUSAL_SEED123 = torch.tensor(
    [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],
     [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]]
)
# MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2) after torch.manual_seed(123).
WRAPPER_SEED123 = torch.tensor(
    [[-0.4519, 0.2216, 0.4772, 0.1063], [-0.5874, 0.0058, 0.5891, 0.3257],
     [-0.6300, -0.0632, 0.6202, 0.3860], [-0.5675, -0.0843, 0.5478, 0.3589],
     [-0.5526, -0.0981, 0.5321, 0.3428], [-0.5299, -0.1081, 0.5077, 0.3493]]
)
# MultiHeadAttention(3, 2, 6, 0.0, num_heads=2) after torch.manual_seed(123).
MHA_SEED123 = torch.tensor(
    [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593],
     [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]
)


def book_batch():
    """The chapter's batch: two copies of the 3-d inputs, shape (2, 6, 3)."""
    return torch.stack((INPUTS_3D, INPUTS_3D), dim=0)


def expect_book_batch(out, printed, what, advice):
    """Both sequences of `book_batch()` give the chapter's printed output; `advice` says what to check."""
    out = expect_tensor(out, what, shape=(2, 6, 2))
    for b in range(2):
        assert torch.allclose(out[b].float(), printed, atol=BOOK_ATOL), (
            f"batch element {b} differs from the chapter's printout. {advice}")


def seeded_rand_weights(seed, d_in, d_out):
    """What torch.manual_seed(seed) and three torch.rand(d_in, d_out) draws give."""
    with seeded(seed):
        return tuple(torch.rand(d_in, d_out) for _ in range(3))
