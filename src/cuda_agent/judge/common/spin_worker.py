"""A worker that only spins the CPU for a given time: the host clock's own noise on a machine, with no
GPU and no task (benchmarks/host_clock.py). Judge code on both ends of the channel, nothing else."""

from __future__ import annotations

import time
from typing import Any

from cuda_agent.judge.common.channel import serve


def spin(ms: float) -> dict[str, Any]:
    """Busy-wait `ms` milliseconds (a stand-in for a timed round) and say how long it really took."""
    began = time.perf_counter()
    end = began + ms / 1000
    while time.perf_counter() < end:
        pass
    return {"spun_ms": (time.perf_counter() - began) * 1000}


def main() -> None:
    serve({"spin": spin, "exit": lambda: {}})


if __name__ == "__main__":
    main()
