import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.w = nn.Parameter(torch.empty(cols))
        try:
            self.sm_count = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        except (RuntimeError, AssertionError):
            self.sm_count = 132  # H100/H200 default when no device is visible at construction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.col_scale_forward(x, self.w)
