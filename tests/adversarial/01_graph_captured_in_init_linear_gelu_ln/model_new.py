"""CHEAT (issue 33, class 1, Python): the whole model captured into a CUDA graph while it is constructed,
replayed in every forward; no kernel of its own but a copy.

`__init__` builds the reference's layers directly on the GPU and captures `norm(gelu(linear(x)))` on a
static input buffer into a CUDA graph. The parameters never move afterwards (`.cuda()` keeps tensors
already there; `load_state_dict` copies the reference's weights into them in place), so the graph computes
with the loaded weights. forward copies x in with the submission's copy kernel, replays the graph and
copies the output out: no PyTorch op is dispatched during a call. The replay runs cuBLAS's GEMM (library
time: the extension calls cublasSetStream) and PyTorch's GELU and LayerNorm kernels; the GEMM is ~85% of
the GPU time, so a coverage gate that credits cuBLAS kernels to a submission linking cuBLAS passes it at
eager speed: +1 for writing no kernel.

Must be rejected: PyTorch compute launched outside the gated window. The capture is seen while the model
is constructed (the op gate watches import, construction and load_state_dict for ops dispatched while a
stream captures); GELU's and LayerNorm's kernels are PyTorch's by the binary that holds them.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import cuda_extension

BATCH = 4096


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, device="cuda")
        self.norm = nn.LayerNorm(out_features, device="cuda")
        self.static_x = torch.randn(BATCH, in_features, device="cuda")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():  # warm-up on a side stream, as capture requires
            for _ in range(2):
                self.norm(F.gelu(self.linear(self.static_x)))
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self.graph):
            self.static_y = self.norm(F.gelu(self.linear(self.static_x)))
        torch.cuda.synchronize()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cuda_extension.copy_into(x, self.static_x)
        self.graph.replay()
        out = torch.empty_like(self.static_y)
        cuda_extension.copy_into(self.static_y, out)
        return out
