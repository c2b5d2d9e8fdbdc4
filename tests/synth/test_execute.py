"""Execution filters on the CPU (CPU-only mode), the worker pool, and GPU timing when a GPU is there."""

from __future__ import annotations

import pytest

from cuda_agent.synth.filters.execute import ExecConfig, check_task, next_batch, rescale_batch

GOOD = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, out_features):
        super().__init__()
        self.linear = nn.Linear(features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch_size = 16
features = 64
out_features = 32


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, out_features]
"""
FORWARD = "return torch.relu(self.linear(x))"
CPU = ExecConfig(device="cpu", band_ms=None, compile=False)


def variant(body: str) -> str:
    return GOOD.replace(FORWARD, body)


def test_known_good_accepted_cpu_only():
    r = check_task(GOOD, CPU)
    assert r.accepted, r
    assert ("timing", "skipped (cpu-only)") in r.log
    assert r.eager_ms is None


@pytest.mark.parametrize(
    ("body", "stage", "reason"),
    [
        ("return torch.dropout(self.linear(x), 0.5, True)", "determinism", "random"),
        (
            "self.calls = getattr(self, 'calls', 0) + 1\n        return self.linear(x) * self.calls",
            "determinism",
            "nondeterministic",
        ),
        ("return self.linear(x) * 0.0 + 3.0", "degenerate", "constant_output"),
        ("return self.linear(x) * 1e-4", "degenerate", "constant_output"),
        ("return self.linear.weight * 1.0 + x.sum() * 0.0", "input_sensitivity", "input_insensitive"),
        ("return torch.log(self.linear(x) - 100.0)", "eager", "non_finite_output"),
        ("return self.linear(x[:, :3])", "eager", "eager_error"),
    ],
)
def test_bad_tasks_rejected_with_reason(body, stage, reason):
    r = check_task(variant(body), CPU)
    assert not r.accepted
    assert (r.stage, r.reason) == (stage, reason), r.detail


def test_outside_band_rejected():
    too_slow = ExecConfig(device="cpu", band_ms=(1e-6, 1e-5), compile=False, calibrate=False)
    r = check_task(GOOD, too_slow)
    assert (r.stage, r.reason) == ("timing", "too_slow")
    too_fast = ExecConfig(device="cpu", band_ms=(1e4, 1e5), compile=False, calibrate=False)
    r = check_task(GOOD, too_fast)
    assert (r.stage, r.reason) == ("timing", "too_fast")
    assert r.eager_ms is not None


def test_calibration_rescales_batch(monkeypatch):
    import re

    import cuda_agent.synth.filters.execute as ex

    assert "batch_size = 48" in rescale_batch(GOOD, 48)
    # A deterministic clock: 0.01 ms per batch row, so batch 4 is far below a 5-50 ms band.
    monkeypatch.setattr(ex, "_time_ms", lambda runner, cfg, model=None: runner.inputs[0].shape[0] * 0.01)
    cfg = ExecConfig(device="cpu", band_ms=(5.0, 50.0), compile=False)
    r = check_task(rescale_batch(GOOD, 4), cfg)
    assert r.accepted, r
    assert 500 <= r.batch_size <= 5000 and f"batch_size = {r.batch_size}" in r.code
    assert re.search(r"rescale to \d+", " ".join(msg for stage, msg in r.log if stage == "timing"))
    assert 5.0 <= r.eager_ms <= 50.0


def test_next_batch_fits_the_launch_floor():
    # 0.02 ms launch floor plus 1e-6 ms per row: proportional scaling from batch 1024 (0.021 ms) would
    # guess ~75x; the affine fit through two points finds the ~1.5M rows the 1.58 ms target needs.
    def clock(n: int) -> float:
        return 0.02 + 1e-6 * n

    assert next_batch([(1024, clock(1024))], 1.58) < 100_000
    fitted = next_batch([(16, clock(16)), (1024, clock(1024))], 1.58)
    assert 0.5 <= clock(fitted) <= 2.0, fitted
    # Noise at the floor (time went down) falls back to the proportional guess, and the cap holds.
    assert next_batch([(16, 0.021), (1024, 0.020)], 1.58) == next_batch([(1024, 0.020)], 1.58)
    assert next_batch([(16, clock(16)), (1024, clock(1024))], 1.58, max_batch=4096) <= 4096
    # Seen on an H200: 0.041 ms at 16, 0.049 ms at 512; the fit steps past the proportional guess.
    assert next_batch([(16, 0.041), (512, 0.049)], 1.58) > next_batch([(512, 0.049)], 1.58)
    # A noisy slope that implies a negative launch cost never steps shorter than proportional when too
    # fast, nor further when too slow.
    assert next_batch([(256, 0.010), (512, 0.049)], 1.58) == next_batch([(512, 0.049)], 1.58)
    assert next_batch([(2048, 10.0), (4096, 80.0)], 1.58) == next_batch([(4096, 80.0)], 1.58)


def test_calibration_escapes_a_launch_bound_start(monkeypatch):
    import cuda_agent.synth.filters.execute as ex

    # Proportional steps alone go 16 -> 1024 -> 65536 (0.086 ms) and give up after two calibrations.
    monkeypatch.setattr(ex, "_time_ms", lambda runner, cfg, model=None: 0.02 + 1e-6 * runner.inputs[0].shape[0])
    cfg = ExecConfig(device="cpu", band_ms=(0.5, 50.0), compile=False, max_calibrations=2)
    r = check_task(GOOD, cfg)
    assert r.accepted, r
    assert 0.5 <= r.eager_ms <= 50.0 and r.batch_size > 100_000


@pytest.mark.slow
def test_compile_only_failure_rejected_and_good_compiles():
    cfg = ExecConfig(device="cpu", band_ms=None, compile=True)
    bad = variant("y = self.linear(x)\n        return y * 2.0 if torch.compiler.is_compiling() else y")
    r = check_task(bad, cfg)
    assert (r.stage, r.reason) == ("compile", "compile_mismatch"), r.detail
    good = check_task(GOOD, cfg)
    assert good.accepted, good.detail
    assert ("compile", "ok") in good.log


def test_worker_pool_survives_hang_and_crash():
    from cuda_agent.synth.workers import WorkerPool

    hang = variant("import time\n        time.sleep(60)\n        return x")
    crash = variant("import os\n        os._exit(3)")
    jobs = {"good1": GOOD, "hang": hang, "crash": crash, "good2": GOOD}
    got = {}
    with WorkerPool(2, CPU, task_timeout_s=6, start_timeout_s=120) as pool:
        for job, code in jobs.items():
            pool.submit(job, code)
        for _ in range(400):
            for job, result in pool.poll(0.5):
                got[job] = result
            if len(got) == len(jobs):
                break
        assert pool.restarts >= 2
    assert got["good1"].accepted and got["good2"].accepted
    assert got["hang"].reason == "timeout"
    assert got["crash"].reason == "worker_crashed"


@pytest.mark.gpu
def test_gpu_band_timing_and_rescale():
    cfg = ExecConfig(device="cuda", band_ms=(0.5, 50.0), compile=True)
    r = check_task(GOOD, cfg)
    assert r.accepted, r.detail
    assert 0.5 <= r.eager_ms <= 50.0
    assert r.batch_size is not None and r.batch_size > 16  # rescaled up from a tiny batch
    assert r.compile_ms is not None and r.device_name


@pytest.mark.gpu
def test_gpu_nondeterministic_atomics_rejected():
    code = GOOD.replace(
        FORWARD,
        "idx = (torch.arange(x.shape[0] * 64, device=x.device) % 7).view(x.shape[0], 64)\n"
        "        out = torch.zeros(7, 64, device=x.device, dtype=x.dtype)\n"
        "        return out.scatter_add(0, idx, x * 1e3)",
    ).replace("batch_size = 16", "batch_size = 1 << 16")
    cfg = ExecConfig(device="cuda", band_ms=None, compile=False, det_atol=0.0, det_rtol=0.0)
    r = check_task(code, cfg)
    assert (r.stage, r.reason) == ("determinism", "nondeterministic")
