"""Adversarial-suite task (issue 35, a mean of bounded per-row terms, session 23): a cosine-similarity loss,
mean(1 - cos(a_i, b_i)) over 8192 rows of 4096 fp32 elements, where b = sign * a + 0.01 * noise with a sign drawn
per draw (the loss is near 2 on some draws and near 0 on others, so no constant answers it). No few elements
of a or b move a mean of bounded terms by 1/64 of the larger of its magnitude and atol, so the outlier
audit leaves both inputs without outliers (CPU emulation of the judge's preparation). Noise 0.01: the rows' terms are alike, so half of the rows give the mean inside the precision
audit's bound on both kinds of draw (CPU, 8192 x 4096: statistic 0.02-2.7 of 9, for half or 1/16 of the
rows or half the columns), and the judge's sample stand-in (trusted/sample_standin.py) makes the task
degenerate. (At noise 0.05 the parallel draws already refuse a half sample: statistic 0.9-37.)
"""

import torch
import torch.nn as nn

ROWS = 8192
COLS = 4096
NOISE = 0.01


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mean(1 - torch.nn.functional.cosine_similarity(a, b, dim=1))


def get_inputs():
    a = torch.randn(ROWS, COLS)
    sign = torch.where(torch.rand(()) < 0.5, 1.0, -1.0)  # a tensor: the judge draws shapes on "meta" too
    return [a, sign * a + NOISE * torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
