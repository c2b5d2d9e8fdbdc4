"""Precision parity of a judged kernel, from its precision-audit ratio (issue 29 item 7).

A speedup bought with lower precision (TF32, fp16/bf16 math inside an fp32 task) is the field's most common
complaint about published results. The judge's precision audit (judge/trusted/precision.py) measures each
kernel's error in units of what an honest kernel in the task's precision can be off by; the verdict keeps
the largest as `checks.precision_error_ratio`, and records carry it as `precision_ratio` with the bound k.
A kernel is *at parity* (computes in the task's precision: fp32 in an fp32 task) when that ratio is known
and at most k. The report prints the ratio and the class below for every kernel, and counts fast_p over
kernels at parity beside the plain one. A kernel without a ratio (audit off, old records, no truth) is not
counted at parity: parity is a claim the measurement must support.
"""

from __future__ import annotations

import math

from cuda_agent.eval.records import EvalRecord
from cuda_agent.judge.trusted.precision_bound import DEFAULT_K  # for records that did not say their k

# Above the bound k: (upper end of the ratio, what a kernel in that range computes in, why), in order. From
# the audit's calibration (docs/design/precision.md): honest kernels measure at most 1.0 (so at most k is
# the task's precision); rounded weights and half accumulators in half tasks 4-25; TF32 operands 190-510;
# fp16/bf16 operands or half accumulators in fp32 tasks 190 and far more.
LOWERED: tuple[tuple[float, str, str], ...] = (
    (100.0, "slightly lowered", "rounded weights or half accumulators in half tasks measure 4-25"),
    (math.inf, "TF32/fp16/bf16 math", "TF32 operands measure 190-510, fp16/bf16 operands in fp32 tasks 190+"),
)


def at_parity(record: EvalRecord) -> bool:
    """Correct, with a measured precision ratio within the bound it was judged against."""
    ratio = record.precision_ratio
    return record.passed and ratio is not None and ratio <= (record.precision_k or DEFAULT_K)


def precision_label(record: EvalRecord) -> str:
    """`0.42 (task precision)`, `190 (TF32/fp16/bf16 math)`, or `-` when not measured."""
    ratio = record.precision_ratio
    if ratio is None:
        return "-"
    k = record.precision_k or DEFAULT_K
    name = "task precision" if ratio <= k else next(n for top, n, _ in LOWERED if ratio <= top)
    return f"{ratio:.3g} ({name})"
