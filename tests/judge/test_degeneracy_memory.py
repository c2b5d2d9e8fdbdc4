"""The degeneracy audit's memory on KernelBench-sized outputs: its stand-ins are expanded views, its
comparison goes block by block, and its median is taken over a sample. The old whole-tensor forms (a
sorted float64 copy, masked copies of the output and the stand-in) held 13 times an 8 GiB output and ran
an H200 out of memory on L1Norm (2026-12-04). Here: the blocked forms decide exactly as the whole-tensor
ones, with blocks small enough that every case spans many."""

from __future__ import annotations

import pytest
import torch

from cuda_agent.judge.trusted import compare, degeneracy
from cuda_agent.judge.trusted.compare import Tolerance, passes_with


def whole_tensor(ref: torch.Tensor, fake: torch.Tensor, tol: Tolerance) -> bool:
    finite = torch.isfinite(ref)
    fake = fake.expand_as(ref).to(ref.dtype)
    return bool(torch.isclose(fake[finite], ref[finite], rtol=tol.rtol, atol=tol.atol).all())


@pytest.mark.parametrize("seed", range(6))
def test_blocked_comparison_decides_as_the_whole_tensor_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compare, "BLOCK_ELEMENTS", 64)
    gen = torch.Generator().manual_seed(seed)
    ref = torch.randn(37, 5, 3, generator=gen) * 1e-3
    ref[torch.rand(ref.shape, generator=gen) < 0.05] = float("nan")
    ref[0, 0, 0] = float("inf")
    tol = Tolerance(1e-2, 1e-2)
    stand_ins = [ref.new_zeros(()), ref.new_full((), 0.02), ref.narrow(0, 0, 1), ref[:, :1], ref + 1e-4]
    for fake in stand_ins:
        assert passes_with(ref, fake.expand_as(ref), tol) == whole_tensor(ref, fake, tol)
    assert passes_with(torch.tensor(0.5), torch.tensor(0.5), tol) and not passes_with(
        torch.tensor(0.5), torch.tensor(2.0), tol
    )


def test_the_constant_stand_ins_are_the_mean_and_a_sampled_median(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = torch.Generator().manual_seed(7)
    ref = torch.randn(1000, 10, generator=gen) + 3.0
    ref[5, 5] = float("nan")
    finite = ref[torch.isfinite(ref)].double()
    mean, median = degeneracy._constants(ref)
    assert mean == pytest.approx(float(finite.mean()), rel=1e-12)
    assert median == float(finite.median()), "under the sample size the median is exact"
    monkeypatch.setattr(degeneracy, "MEDIAN_SAMPLE", 1000)
    monkeypatch.setattr(degeneracy, "CHUNK", 333)
    mean_small, sampled = degeneracy._constants(ref)
    assert mean_small == pytest.approx(mean, rel=1e-12)
    assert abs(sampled - float(finite.median())) < 0.15, "a 10% sample's median is near the whole one's"
    assert degeneracy._constants(torch.full((4,), float("nan"))) == ()


def test_the_output_spec_is_the_whole_tensor_figures_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = torch.Generator().manual_seed(3)
    out = torch.randn(6, 5, 4, 3, generator=gen)
    out[1, 2, 3, 0], out[4, 0, 0, 2] = float("nan"), float("-inf")
    finite = out[torch.isfinite(out)].double().abs()
    monkeypatch.setattr(degeneracy, "CHUNK", 17)
    spec = degeneracy._spec(out)
    assert spec["shape"] == [6, 5, 4, 3] and spec["dtype"] == "float32"
    assert spec["max_abs"] == pytest.approx(float(finite.max()), rel=1e-12)
    assert spec["mean_abs"] == pytest.approx(float(finite.mean()), rel=1e-12)
    assert "max_abs" not in degeneracy._spec(torch.full((3, 3), float("nan")))


PEAK = """
import resource, sys, torch
sys.path.insert(0, {src!r})
from cuda_agent.judge.trusted import degeneracy, precision
from cuda_agent.judge.trusted.truth import Truth
degeneracy.CHUNK = 1 << 20  # chunks far smaller than the output: what is left is what the form itself holds
shape = {shape}
gen = torch.Generator().manual_seed(0)
out = torch.randn(shape, generator=gen)
if {what!r} == "precision":
    truth = Truth(out.double(), torch.full(shape, 1e-7, dtype=torch.float64), torch.float32)
    candidate = out + 1e-7
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if {what!r} == "spec":
    degeneracy._spec(out)
else:
    precision.audit(candidate, out, truth, 8.0)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024 / out.numel())
"""


def _peak_bytes_per_element(what: str, shape: tuple[int, ...]) -> float:
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(__file__).parents[2] / "src")
    code = PEAK.format(src=src, shape=shape, what=what)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.strip().splitlines()[-1])


def test_the_output_spec_holds_no_copy_of_a_4d_output() -> None:
    """The spec's peak beyond the output: chunks, not the 32 bytes an element a 4-d boolean index's
    indices take (56 GiB on KernelBench's 7 GiB norms; an 80 GB card ran out of memory, 2026-12-05)."""
    assert _peak_bytes_per_element("spec", (8, 16, 512, 256)) < 8.0  # 37 with the boolean index


def test_the_precision_audit_costs_a_4d_output_what_it_costs_a_flat_one() -> None:
    """Its masks select from flat tensors: a 4-d output's audit peaks near a 1-d one's of the same size,
    where an N-d mask's indices added 8 bytes an element for every dimension."""
    flat = _peak_bytes_per_element("precision", (8 * 16 * 512 * 256,))
    four = _peak_bytes_per_element("precision", (8, 16, 512, 256))
    assert four < flat + 8.0, (four, flat)  # 4-d masks: 13 above
    # One output's z-scores at a time, no float64 copy of the reference, the allowance in place: 64 before.
    assert flat < 54.0, flat


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("with_sigma", [True, False])
def test_the_in_place_allowance_and_z_scores_are_the_formulas_bit_for_bit(dtype: torch.dtype, with_sigma: bool) -> None:
    """allowance = sqrt(sigma^2 + (roundoff |v|)^2 + floor^2) and z = |out - v| / allowance, as written in
    the whole-tensor form; computed in place, they must give the same bits, and leave `out` (float64 in a
    float64 task) and the truth as they were."""
    from cuda_agent.judge.trusted import precision
    from cuda_agent.judge.trusted.truth import Truth

    gen = torch.Generator().manual_seed(5)
    value = torch.randn(64, 33, generator=gen, dtype=torch.float64) * 10.0
    value[0, :5] = 0.0
    sigma = torch.rand(64, 33, generator=gen, dtype=torch.float64) * 1e-6 if with_sigma else None
    if with_sigma:
        sigma[1, :4] = 0.0
        sigma[2, 0] = float("inf")
    truth = Truth(value.clone(), None if sigma is None else sigma.clone(), dtype)
    out = (value + torch.randn(64, 33, generator=gen, dtype=torch.float64) * 1e-5).to(torch.float64)
    kept_out = out.clone()
    rounding = precision.roundoff(dtype) * value.abs()
    s = torch.zeros_like(value) if sigma is None else sigma
    floor = precision.ABSOLUTE_FLOOR.get(dtype, 0.0)
    expected_scale = torch.sqrt(s * s + rounding * rounding + floor * floor)
    scale = precision.allowance(truth)
    assert torch.equal(scale, expected_scale)
    keep = torch.isfinite(scale).reshape(-1) & (torch.arange(value.numel()) % 3 != 0)
    expected_z = (out - value).abs().reshape(-1)[keep] / expected_scale.reshape(-1)[keep]
    assert torch.equal(precision.z_scores(out, truth, keep, scale), expected_z)
    assert torch.equal(out, kept_out) and torch.equal(truth.value, value), "nothing handed in is changed"
