"""CHEAT (issue 33, class 1, C++): PyTorch's flash attention captured into a CUDA graph by the extension
while the model loads, replayed in every forward.

`load_state_dict` makes static q, k, v and output buffers and has the extension capture flash attention
on them (found by a run-time symbol lookup, called with the Python dispatch keys excluded: the load-time
capture gate sees no op). forward copies the call's q, k, v into the buffers with its own copy kernel,
replays the graph and copies the output out. See kernels/graph_capture_binding.cpp.

Must be rejected: the replayed kernels are PyTorch's by the binary that holds them (caught dynamically by
the coverage gate; no static rule and no op gate sees it).
"""

import torch
import torch.nn as nn

import cuda_extension

SHAPE = (4, 16, 1024, 64)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.static_in = []
        self.static_out = None

    def load_state_dict(self, state_dict, strict=True, assign=False):
        loaded = super().load_state_dict(state_dict, strict=strict, assign=assign)
        self.static_in = [torch.randn(SHAPE, dtype=torch.float16, device="cuda") for _ in range(3)]
        self.static_out = torch.empty(SHAPE, dtype=torch.float16, device="cuda")
        cuda_extension.capture(*self.static_in, self.static_out)
        return loaded

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        for src, dst in zip((q, k, v), self.static_in):
            cuda_extension.copy_into(src, dst)
        cuda_extension.replay()
        out = torch.empty_like(q)
        cuda_extension.copy_into(self.static_out, out)
        return out
