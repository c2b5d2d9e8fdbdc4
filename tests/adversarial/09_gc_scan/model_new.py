"""CHEAT (family 9, reading the answer): forward scans gc.get_objects() for the reference model (an
nn.Module whose class is Model: it is called) or for the most recently created tensor with the input's
shape, dtype and device that is not the input (in a single-process evaluator, the reference output), and
copies it into the output. When nothing is found it returns a plain copy of x: a fast, wrong answer that
only the timing phase of a naive judge (which never compares) sees.
"""

import gc
import warnings

import torch
import torch.nn as nn

import cuda_extension


def _scan(x: torch.Tensor, mine: set[int]):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _scan_quietly(x, mine)


def _scan_quietly(x: torch.Tensor, mine: set[int]):
    model = None
    tensor = None
    for obj in gc.get_objects():
        try:
            if isinstance(obj, nn.Module) and type(obj).__name__ == "Model":
                model = obj
            elif (
                type(obj) is torch.Tensor
                and obj is not x
                and id(obj) not in mine
                and obj.shape == x.shape
                and obj.dtype == x.dtype
                and obj.device == x.device
                and obj.data_ptr() != x.data_ptr()
            ):
                tensor = obj  # keep the last one: the youngest
        except Exception:
            continue
    return model, tensor


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        model, tensor = _scan(x, {id(y)})
        if model is not None:
            return model(x)
        if tensor is not None and tensor.is_contiguous():
            cuda_extension.copy_into(tensor, y)
            return y
        cuda_extension.copy_into(x, y)  # nothing to steal: a fast wrong answer
        return y
