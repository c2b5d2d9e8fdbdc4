"""Static checks of a submission's sources, with reasons an agent can act on.

They reject the obvious before anything runs: Python that walks frames, patches modules, starts
threads, imports beyond torch and the extension, or wraps the custom path in try/except; C++/CUDA that
starts threads or processes, calls back into Python, uses private streams or L2 persistence, or uses
cuBLAS/cuDNN where the task has no matrix product/convolution. The dynamic gates (op gate, coverage,
timing cross-checks) stand behind them; these checks exist so the common cheats fail fast and clearly.

Trust boundary: runs in the parent on source text and on the symbols the built binary imports. The source
rules are defence in depth (spellings evade them; they exist for fast, readable reasons); the import rules
read the linked binary, which spelling cannot change.

The checks live by what they read: static_python.py (model_new.py), static_source.py (kernels/, preprocessed),
static_imports.py (the symbols the built objects import); their rule tables, each rule with its reason, in
static_python_rules.py and static_source_rules.py (static_imports.py keeps its own). This module is the
entry point the judge's stages import.
"""

from __future__ import annotations

from cuda_agent.judge.trusted.library_rules import CONV_OPS, GEMM_OPS
from cuda_agent.judge.trusted.static_finding import Finding, describe
from cuda_agent.judge.trusted.static_imports import check_imports
from cuda_agent.judge.trusted.static_python import check_model_new
from cuda_agent.judge.trusted.static_source import check_kernel_sources

__all__ = [
    "CONV_OPS",
    "GEMM_OPS",
    "Finding",
    "check_imports",
    "check_kernel_sources",
    "check_model_new",
    "describe",
]
