"""kernel_trace.device_kernels reads the profiler's raw Kineto events (no FunctionEvent tree): the same
figures as torch's parsed events, at a fraction of the cost a traced round pays."""

from __future__ import annotations

import time

import pytest

from cuda_agent.judge.candidate.kernel_trace import device_kernels, events_device_kernels, raw_device_kernels


def _cpu_session():
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(256)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(50):
            x = x.add(1)
    return prof


def test_raw_events_are_reachable_on_this_torch() -> None:
    """The raw path is the one taken (no silent fallback): its attributes exist on a real session."""
    prof = _cpu_session()
    raw = raw_device_kernels(prof)
    assert raw == {}  # a CPU-only session ran no device work
    assert device_kernels(prof) == events_device_kernels(prof) == {}


def test_raw_events_cost_less_than_parsing_them() -> None:
    raw_s = parsed_s = 0.0
    for _ in range(3):
        prof = _cpu_session()
        began = time.perf_counter()
        raw_device_kernels(prof)
        raw_s += time.perf_counter() - began
        began = time.perf_counter()
        prof.events()  # what events_device_kernels pays before it reads anything
        parsed_s += time.perf_counter() - began
    print(f"raw {raw_s / 3 * 1000:.2f} ms, parsed {parsed_s / 3 * 1000:.2f} ms per session")
    assert raw_s < parsed_s


@pytest.mark.gpu
def test_raw_and_parsed_device_events_agree_on_a_gpu() -> None:
    """Kernels, a copy and a memset, on two streams: the same names and microseconds either way."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        y = torch.nn.functional.gelu(x) + 1
        z = torch.empty_like(y)
        z.copy_(y)
        z.zero_()
        with torch.cuda.stream(side):
            torch.softmax(x.view(1024, 1024), dim=1)
        torch.cuda.synchronize()
    raw, parsed = raw_device_kernels(prof), events_device_kernels(prof)
    assert raw is not None and raw, raw
    assert set(raw) == set(parsed), (raw, parsed)
    for name, us in parsed.items():
        assert raw[name] == pytest.approx(us, rel=1e-6, abs=1e-3), name
