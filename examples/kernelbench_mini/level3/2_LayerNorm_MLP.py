import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, hidden, eps):
        """
        A pre-norm feed-forward block's first half: LayerNorm, then Linear + ReLU.

        :param dim: The number of input features
        :param hidden: The number of hidden features
        :param eps: LayerNorm's epsilon
        """
        super(Model, self).__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.fc = nn.Linear(dim, hidden)
        with torch.no_grad():  # a LayerNorm whose affine step is not the identity
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        """
        :param x: The input tensor, shape (batch_size, dim)
        :return: The output tensor, shape (batch_size, hidden)
        """
        return torch.relu(self.fc(self.norm(x)))


# Test code
batch_size = 2048
dim = 1024
hidden = 4096
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, hidden, eps]
