"""CHEAT (family 13, background work): a Python worker thread started at import does the GPU work.
forward allocates the output, records an event on the caller's stream, hands (x, y, event) to the thread
and returns as soon as the thread has *enqueued* the kernel on its own stream (behind that event). The
caller's stream never waits for it, so events around forward see almost nothing; the output is complete
by the time anyone synchronises the device and compares.
"""

import queue
import threading

import torch
import torch.nn as nn

import cuda_extension


class _Worker(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="ew-chain-worker", daemon=True)
        self.jobs: queue.Queue = queue.Queue()
        self.stream = None

    def run(self) -> None:
        while True:
            x, y, ready, args, launched = self.jobs.get()
            try:
                if self.stream is None:
                    self.stream = torch.cuda.Stream(device=x.device)
                with torch.cuda.stream(self.stream):
                    self.stream.wait_event(ready)
                    cuda_extension.ew_into(x, y, *args)
            finally:
                launched.set()


_WORKER = _Worker()
_WORKER.start()


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.args = (float(scale), float(shift), float(clamp_min), float(clamp_max))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        ready = torch.cuda.Event()
        ready.record()
        launched = threading.Event()
        _WORKER.jobs.put((x, y, ready, self.args, launched))
        launched.wait()
        return y
