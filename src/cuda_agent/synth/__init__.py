"""Data synthesis: build thousands of valid, decontaminated KernelBench-format training tasks.

The pipeline mirrors how CUDA-Agent-Ops-6K was made. `catalog` crawls operators from the installed
`torch` and `transformers`, `compose` samples operator chains and sizes them for a runtime band, `render`
writes them as KernelBench tasks, `filters.static` and `filters.execute` keep only tasks that run, are
deterministic and non-degenerate, `decontam` drops tasks close to a benchmark, `dataset` reads and writes
parquet, and `pipeline` drives it all resumably. Nothing here runs at import time: submodules load lazily
so that `import cuda_agent.synth` stays cheap.
"""

from __future__ import annotations

DEFAULT_MIX: dict[str, float] = {
    "torch#1": 0.034,
    "torch#2": 0.838,
    "torch#3": 0.076,
    "torch#4": 0.028,
    "torch#5": 0.012,
    "transformers": 0.012,
}
"""CUDA-Agent-Ops-6K's mix of operator counts (the paper's Table/figure), by `data_source` bucket."""
