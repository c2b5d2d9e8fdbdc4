"""Trusted side: the whole decision on one call's outputs, from tensors alone.

The reference worker reads what the candidate handed over and calls `judge_outputs` with its own outputs,
aliasing and float64 truths: values (with the flips a cut allows), shared memory against what the
reference shares, and the precision audit. Pure tensors in, a verdict dict out, so it is tested on the CPU
(tests/judge/test_output_rules.py, test_truth.py, test_verification_audits.py).
"""

from __future__ import annotations

from typing import Any

import torch

from cuda_agent.judge.trusted import cuts, layout, precision, truth, truth_rows
from cuda_agent.judge.trusted.compare import Tolerance, compare_tensor


def _aliases_of(value: Any, count: int) -> list[list[str]] | None:
    """The candidate worker's aliasing report, checked to be a list of lists of short strings."""
    if not isinstance(value, list) or len(value) != count:
        return None
    if not all(isinstance(v, list) and all(isinstance(a, str) and len(a) < 32 for a in v) for v in value):
        return None
    return value


def judge_outputs(
    expected: list[torch.Tensor], produced: list[Any], tol: Tolerance,
    ref_aliases: list[list[str]] | None, got_aliases: Any,
    exact: list[truth.Truth | None] | None, precision_k: float | None,
    alts: list[cuts.Alternatives | None] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The whole decision on one call's outputs: values (boolean and integer outputs may flip only where
    `alts`, the reference with its cuts shifted, allow), shared memory, precision. Pure tensors in, a
    verdict out, so it is tested on the CPU."""
    reported = _aliases_of(got_aliases, len(expected)) if ref_aliases is not None else None
    if ref_aliases is not None and reported is None:
        return {"match": False, "reason": "the candidate worker gave no valid report of its outputs' memory"}
    ratios, missing = [], []
    for k, (ref, got) in enumerate(zip(expected, produced, strict=True)):
        label = "output" if len(expected) == 1 else f"output {k}"
        alt = alts[k] if alts and k < len(alts) else None
        flips = None
        if alt is not None and precision_k and exact is not None and k < len(exact) and cuts.discrete(ref):
            flips = cuts.within_honest_error(cuts.ambiguous(ref, alt), ref, exact[k])
        problem = compare_tensor(ref, got, tol, label, alt, flips)
        if problem:
            return {"match": False, "reason": problem}
        if ref_aliases is not None and reported is not None:
            problem = layout.problem(ref, got, ref_aliases[k], reported[k], label)
            if problem:
                return {"match": False, "reason": problem, "kind": "layout"}
        if precision_k and ref.is_complex():
            missing.append(label)  # the truth follows real values only (truth.py): fails closed
            continue
        if not (precision_k and precision.auditable(ref)):
            continue
        found_truth = exact[k] if exact is not None and k < len(exact) else None
        if found_truth is not None:  # held to the block of the batch's rows it covers, if one (truth_rows.py)
            ref, got = truth_rows.on_rows(ref, found_truth.rows), truth_rows.on_rows(got, found_truth.rows)
        if found_truth is None or tuple(found_truth.value.shape) != tuple(ref.shape):
            missing.append(label)  # no truth: the parent fails closed (decide/reference_stage.py)
            continue
        found = precision.audit(got, ref, found_truth, precision_k)
        ratios.append(found.statistic)
        problem = precision.verdict(found, label)
        if problem:
            return {"match": False, "reason": problem, "kind": "precision", "error_ratio": found.statistic}
    verdict: dict[str, Any] = {"match": True, "error_ratio": max(ratios) if ratios else None}
    if missing:
        verdict["no_truth"] = missing
    return verdict

