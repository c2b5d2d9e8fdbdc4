import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs Layer Normalization over the last dimension.
    """

    def __init__(self, normalized_shape: int, eps: float):
        """
        Initializes the LayerNorm layer.

        Args:
            normalized_shape (int): Size of the last dimension.
            eps (float): Added to the variance for numerical stability.
        """
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape, eps=eps)
        with torch.no_grad():  # affine parameters that are not 1 and 0, so a kernel ignoring them fails
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Layer Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, features).

        Returns:
            torch.Tensor: Output tensor with Layer Normalization applied, same shape as input.
        """
        return self.ln(x)


batch_size = 4096
features = 4096
eps = 1e-5


def get_inputs():
    x = torch.randn(batch_size, features) * 2.0 + 0.5
    return [x]


def get_init_inputs():
    return [features, eps]
