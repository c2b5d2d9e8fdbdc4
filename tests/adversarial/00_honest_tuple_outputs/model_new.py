"""Honest: a task with two outputs, (relu(x), sigmoid(x)), from one kernel that reads x once and writes
both; returned as a tuple like the reference's."""

import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return cuda_extension.relu_sigmoid_forward(x)
