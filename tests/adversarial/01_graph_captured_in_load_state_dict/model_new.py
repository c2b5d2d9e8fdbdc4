"""CHEAT (issue 33, class 1, Python): PyTorch's flash attention captured into a CUDA graph while the model
loads, replayed in every forward.

`load_state_dict` (which the judge calls once, before any forward, with no op gate around it) captures
`F.scaled_dot_product_attention` on static input buffers into a CUDA graph. forward then only copies the
call's q, k, v into those buffers with the submission's own copy kernel, replays the graph, and copies the
graph's output out. forward dispatches no PyTorch compute op (allocation, a graph replay and extension
calls), so an op gate around calls sees nothing; the kernels the replay runs -- PyTorch's flash attention
-- carry `cutlass` in their template arguments, and the extension calls cuBLAS once (cublasSetStream, a
no-op), so a coverage gate that recognises library kernels by name credits them as the submission's
cuBLAS time on this task with matrix products. Correct (it is PyTorch's own attention) and about 3x faster
than eager: a naive judge rewards it with 2.

Must be rejected: PyTorch compute, launched outside the gated window and replayed inside it. The capture
itself is seen (the op gate watches import, construction and load_state_dict for ops dispatched while a
stream captures), and the replayed kernels are PyTorch's by the binary that holds them.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import cuda_extension

SHAPE = (4, 16, 1024, 64)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graph = None
        self.static_in = []
        self.static_out = None

    def load_state_dict(self, state_dict, strict=True, assign=False):
        loaded = super().load_state_dict(state_dict, strict=strict, assign=assign)
        self.capture()
        return loaded

    def capture(self):
        self.static_in = [torch.randn(SHAPE, dtype=torch.float16, device="cuda") for _ in range(3)]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as graph capture requires
            for _ in range(2):
                F.scaled_dot_product_attention(*self.static_in)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = F.scaled_dot_product_attention(*self.static_in).contiguous()
        torch.cuda.synchronize()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        for src, dst in zip((q, k, v), self.static_in):
            cuda_extension.copy_into(src, dst)
        self.graph.replay()
        out = torch.empty_like(q)
        cuda_extension.copy_into(self.static_out, out)
        return out
