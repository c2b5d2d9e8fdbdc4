"""CHEAT (issue 12 class 1, Python): patch the judge's op gate through __dict__ and type.__setattr__, no
import of cuda_agent, no assignment statement to a module attribute; forward is plain eager PyTorch."""

import cuda_extension  # noqa: F401  (built so the submission looks complete; never used)
import torch
import torch.nn as nn
import torch.nn.functional as F

_gate_module = torch.sys.modules.get("cuda_agent.judge.candidate.opgate")
if _gate_module is not None:
    _gate = _gate_module.__dict__["OpGate"]
    type.__setattr__(_gate, "__torch_dispatch__", lambda self, func, types, args=(), kwargs=None: func(*args, **(kwargs or {})))


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.scale, self.shift, self.clamp_min, self.clamp_max = scale, shift, clamp_min, clamp_max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(F.gelu(x * self.scale + self.shift), self.clamp_min, self.clamp_max)
