"""benchmarks/timing_l2_staging.py's stand-in pads on the CPU: the probe swaps them into the judge's Sampler,
so they must take every argument the Sampler hands the judge's own pad. v7's `release` argument was added to
the pad and the Sampler (700e223) but not to these, and the probe's GPU test failed with a TypeError on the
H100 on 2026-12-07: a GPU run is rare, so the mismatch is caught here."""

from __future__ import annotations

import inspect

import pytest

from tests.benchmark_module import load_benchmark


@pytest.mark.parametrize("pad", ["V5Pad", "NoFlushPad"])
def test_the_probes_pads_take_every_argument_of_the_judges_pad(pad: str) -> None:
    from cuda_agent.judge.candidate.pad import PadKernel

    probe = load_benchmark("timing_l2_staging")
    judges = inspect.signature(PadKernel.launch).parameters
    ours = inspect.signature(getattr(probe, pad).launch).parameters
    assert list(ours) == list(judges), (pad, list(ours), list(judges))
    for name, parameter in judges.items():
        assert ours[name].default == parameter.default, (pad, name)
