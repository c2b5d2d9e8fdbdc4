"""Adversarial-suite task (issue 35, a mean of bounded per-row terms, session 23): a cosine-similarity loss,
mean(1 - cos(a_i, b_i)) over 8192 rows of 4096 fp32 elements, where b = sign * a + 1.0 * noise with a sign drawn
per draw (the loss is near 2 on some draws and near 0 on others, so no constant answers it). No few elements
of a or b move a mean of bounded terms by 1/64 of the larger of its magnitude and atol, so the outlier
audit leaves both inputs without outliers (CPU emulation of the judge's preparation). Noise 1.0: the rows' terms differ (cos near 0.7 with a spread of 1e-2), a half sample misses the mean by
tens of times the honest allowance, and the task is judged.
"""

import torch
import torch.nn as nn

ROWS = 8192
COLS = 4096
NOISE = 1.0


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
