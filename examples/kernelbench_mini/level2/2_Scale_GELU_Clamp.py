import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Model that scales and shifts its input, applies GELU, then clamps the result.
    """

    def __init__(self, scale, shift, clamp_min, clamp_max):
        super(Model, self).__init__()
        self.scale = scale
        self.shift = shift
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, dim).

        Returns:
            torch.Tensor: clamp(gelu(x * scale + shift), clamp_min, clamp_max), same shape as x.
        """
        x = x * self.scale + self.shift
        x = F.gelu(x)
        x = torch.clamp(x, min=self.clamp_min, max=self.clamp_max)
        return x


batch_size = 4096
dim = 4096
scale = 1.5
shift = 0.25
clamp_min = -0.1
clamp_max = 2.0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale, shift, clamp_min, clamp_max]
