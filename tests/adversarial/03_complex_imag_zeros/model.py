"""Adversarial-suite task (complex projection): torch.complex(x @ Wr, x @ Wi) for x of (1024, 512) fp32 and
two learnable (512, 512) weights: a complex64 (1024, 512) output whose real and imaginary parts are two GEMMs
(a complex-valued linear layer on a real input, as in spectral and quantum-inspired models).
"""

import torch
import torch.nn as nn

batch_size = 1024
in_features = 512
out_features = 512


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.wr = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)
        self.wi = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.complex(x @ self.wr, x @ self.wi)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
