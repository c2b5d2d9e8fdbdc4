"""Execution filters: run a task and keep it only if it behaves like a usable training reference.

`check_task` runs inside a worker process (see `cuda_agent.synth.workers`), never in the pipeline's own
process, so that a segfault, a CUDA error that poisons the context, or a hang costs one task only. In
order, cheapest first, it checks that the task

1. builds and runs in eager mode, returning finite floating-point tensors;
2. runs inside the eager-time band (GPU only). A task with a module-level `batch_size = N` that lands
   outside the band is rescaled and measured again, a few times at most: the composer's cost model only
   has to be close. The first step assumes time proportional to the batch; later steps fit
   `launch + slope * batch` through the last two measurements, because a tiny task is launch-bound and
   proportional steps barely move it (see `next_batch`). No step may need more than a quarter of the
   free GPU memory for its inputs and outputs;
3. is deterministic: the same model and inputs, re-seeded, give the same output (`nondeterministic`), and
   a second un-seeded call gives the same output too (`random`: the output depends on the RNG);
4. is not degenerate: zeros, the output's mean, or any other single constant must not pass
   `allclose(atol, rtol)` against the output, the judge's own test;
5. depends on its inputs: fresh inputs must change the output beyond that tolerance;
6. compiles with `torch.compile` and matches eager within the tolerance.

The model runs in eval mode under `no_grad`, as the judge runs references. Tensors are created directly on
the device (get_inputs under `torch.device`), which matters for gigabyte inputs.
"""

from __future__ import annotations

import re
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from types import ModuleType
from typing import Any

from cuda_agent.task import tensor_bytes

STAGE_LOAD = "load"
STAGE_EAGER = "eager"
STAGE_TIMING = "timing"
STAGE_DETERMINISM = "determinism"
STAGE_DEGENERATE = "degenerate"
STAGE_INPUTS = "input_sensitivity"
STAGE_COMPILE = "compile"
STAGES = (
    STAGE_LOAD,
    STAGE_EAGER,
    STAGE_TIMING,
    STAGE_DETERMINISM,
    STAGE_DEGENERATE,
    STAGE_INPUTS,
    STAGE_COMPILE,
)

_BATCH_LINE = re.compile(r"^batch_size\s*=\s*(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class ExecConfig:
    """Execution-filter settings. `band_ms=None` skips timing (CPU-only mode)."""

    device: str = "cuda"
    band_ms: tuple[float, float] | None = (1.0, 100.0)
    target_ms: float | None = None
    compile: bool = True
    atol: float = 1e-2
    rtol: float = 1e-2
    det_atol: float = 1e-5
    det_rtol: float = 1e-5
    seed: int = 1234
    calibrate: bool = True
    max_calibrations: int = 5
    min_batch: int = 1
    timing_reps: int = 10
    timing_budget_s: float = 1.5

    @property
    def target(self) -> float:
        assert self.band_ms is not None
        lo, hi = self.band_ms
        return self.target_ms if self.target_ms is not None else lo * (hi / lo) ** 0.25


@dataclass(frozen=True)
class ExecResult:
    """What the execution filter found. `code` is the (possibly rescaled) task source."""

    accepted: bool
    stage: str
    reason: str | None
    detail: str
    code: str
    eager_ms: float | None = None
    compile_ms: float | None = None
    device_name: str = ""
    log: tuple[tuple[str, str], ...] = ()
    wall_s: float = 0.0
    batch_size: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["log"] = [list(x) for x in self.log]
        return d


class _Reject(Exception):
    def __init__(self, stage: str, reason: str, detail: str = "") -> None:
        super().__init__(f"{stage}: {reason}: {detail}")
        self.stage, self.reason, self.detail = stage, reason, detail


def _load(code: str) -> ModuleType:
    module = ModuleType("synth_task")
    module.__file__ = "<synth_task>"
    exec(compile(code, "<synth_task>", "exec"), module.__dict__)
    return module


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def _outputs(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _outputs(v)]
    return []


class _Runner:
    """A loaded task on a device: builds the model and inputs under fixed seeds and runs them."""

    def __init__(self, code: str, cfg: ExecConfig) -> None:
        import torch

        self.code, self.cfg = code, cfg
        self.device = torch.device(cfg.device)
        try:
            self.module = _load(code)
        except Exception as exc:
            raise _Reject(STAGE_LOAD, "import_error", _short_exc(exc)) from exc
        try:
            _seed(cfg.seed)
            with torch.device(self.device):
                self.model = self.module.Model(*self.module.get_init_inputs())
            self.model = self.model.to(self.device).eval()
        except Exception as exc:
            raise _Reject(STAGE_LOAD, _error_reason(exc, "init_error"), _short_exc(exc)) from exc
        self.inputs = self.make_inputs(cfg.seed + 1)

    def make_inputs(self, seed: int) -> list[Any]:
        import torch

        try:
            _seed(seed)
            with torch.device(self.device):
                inputs = list(self.module.get_inputs())
        except Exception as exc:
            raise _Reject(STAGE_LOAD, _error_reason(exc, "inputs_error"), _short_exc(exc)) from exc
        return [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in inputs]

    def run(self, inputs: list[Any] | None = None, model: Any = None, seed: int | None = None) -> list[Any]:
        import torch

        if seed is not None:
            _seed(seed)
        with torch.no_grad():
            out = (self.model if model is None else model)(*(self.inputs if inputs is None else inputs))
        return _outputs(out)


def _short_exc(exc: BaseException) -> str:
    message = re.sub(r"\s+", " ", str(exc)).strip()[:500]
    return f"{type(exc).__name__}: {message}"


def _error_reason(exc: BaseException, default: str) -> str:
    text = str(exc).lower()
    if "out of memory" in text:
        return "oom"
    return default


def _same(a: list[Any], b: list[Any], atol: float, rtol: float) -> bool:
    import torch

    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not torch.allclose(x.float(), y.float(), atol=atol, rtol=rtol, equal_nan=True):
            return False
    return True


def _degenerate(outputs: list[Any], atol: float, rtol: float) -> str | None:
    """Why the output could be matched by a constant, or None. Checks zeros, mean, median, mid-range."""
    import torch

    for i, y in enumerate(outputs):
        yf = y.float()
        candidates = {
            "zeros": torch.zeros((), device=y.device),
            "mean": yf.mean(),
            "midrange": (yf.amax() + yf.amin()) / 2,
        }
        if yf.numel() <= 16_000_000:
            candidates["median"] = yf.median()
        for name, c in candidates.items():
            if bool(torch.allclose(c.expand_as(yf), yf, atol=atol, rtol=rtol)):
                return f"output {i} matches {name} ({float(c):.4g}) within atol={atol}, rtol={rtol}"
    return None


def _time_ms(runner: _Runner, cfg: ExecConfig, model: Any = None) -> float:
    """Median eager time of one forward, by CUDA events (CPU wall clock off-GPU)."""
    import torch

    cuda = runner.device.type == "cuda"
    fn = runner.model if model is None else model
    times: list[float] = []
    with torch.no_grad():
        for _ in range(2):
            fn(*runner.inputs)
        if cuda:
            torch.cuda.synchronize()
        budget_end = time.perf_counter() + cfg.timing_budget_s
        for _ in range(cfg.timing_reps):
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn(*runner.inputs)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                fn(*runner.inputs)
                times.append((time.perf_counter() - t0) * 1e3)
            if time.perf_counter() > budget_end and len(times) >= 3:
                break
    times.sort()
    return times[len(times) // 2]


def rescale_batch(code: str, batch: int) -> str:
    return _BATCH_LINE.sub(f"batch_size = {batch}", code, count=1)


def next_batch(history: list[tuple[int, float]], target_ms: float, max_batch: int | None = None) -> int:
    """The batch expected to take `target_ms`, from the (batch, ms) measurements so far, newest last.

    Eager time is roughly affine in the batch: a fixed launch cost plus a per-row cost. From one point
    only the proportional guess is possible. From two, the fit finds the per-row slope; without it, a
    launch-bound task (0.04 ms at batch 16, 0.05 ms at batch 512 on an H200) is scaled up only as far as
    the launch floor allows per step and can miss the band after every calibration allowed.

    With a positive launch cost the proportional guess always falls short of the target (it treats the
    launch cost as per-row work), so it bounds the fit: when too fast the step is at least proportional,
    when too slow at most. That keeps noise at the launch floor (a slope from two nearly equal times) from
    making a step worse than the proportional one.
    """
    batch, ms = history[-1]
    proportional = batch * target_ms / max(ms, 1e-3)
    estimate = proportional
    if len(history) >= 2:
        (b0, t0), (b1, t1) = history[-2], history[-1]
        slope = (t1 - t0) / (b1 - b0) if b1 != b0 else 0.0
        if slope > 0:
            fitted = b1 + (target_ms - t1) / slope
            estimate = max(fitted, proportional) if ms < target_ms else min(fitted, proportional)
    if max_batch is not None:
        estimate = min(estimate, max_batch)
    return _nice(estimate)


def _memory_cap(runner: _Runner, outputs: list[Any], batch: int) -> int | None:
    """The largest batch whose inputs and outputs fit in a quarter of the free GPU memory (None off-GPU)."""
    import torch

    if runner.device.type != "cuda":
        return None
    per_row = tensor_bytes([runner.inputs, outputs]) / max(batch, 1)
    if per_row <= 0:
        return None
    free, _total = torch.cuda.mem_get_info(runner.device)
    return max(1, int(free / 4 / per_row))


def _nice(n: float) -> int:
    n = max(1, int(n))
    if n <= 4:
        return n
    p = 1 << (n.bit_length() - 2)
    return (n // p) * p


def _free(device_type: str) -> None:
    import gc

    import torch

    gc.collect()
    if device_type == "cuda":
        torch.cuda.empty_cache()


def _eager(code: str, cfg: ExecConfig) -> tuple[_Runner, list[Any]]:
    runner = _Runner(code, cfg)
    try:
        out = runner.run(seed=cfg.seed + 3)
    except Exception as exc:
        raise _Reject(STAGE_EAGER, _error_reason(exc, "eager_error"), _short_exc(exc)) from exc
    if not out:
        raise _Reject(STAGE_EAGER, "no_tensor_output", "forward returned no tensors")
    import torch

    for y in out:
        if not y.dtype.is_floating_point:
            raise _Reject(STAGE_EAGER, "non_float_output", str(y.dtype))
        if y.numel() == 0:
            raise _Reject(STAGE_EAGER, "empty_output", str(tuple(y.shape)))
        if not bool(torch.isfinite(y).all()):
            raise _Reject(STAGE_EAGER, "non_finite_output", "output has NaN or Inf")
    return runner, out


def check_task(code: str, cfg: ExecConfig) -> ExecResult:
    """Run every execution check on `code`; never raises (errors become rejections)."""
    import torch

    t0 = time.perf_counter()
    log: list[tuple[str, str]] = []
    eager_ms = compile_ms = None
    device_name = torch.cuda.get_device_name() if cfg.device.startswith("cuda") else "cpu"
    batch = None
    m = _BATCH_LINE.search(code)
    if m:
        batch = int(m.group(1))
    try:
        runner, out = _eager(code, cfg)
        log.append((STAGE_EAGER, "ok"))

        if cfg.band_ms is not None:
            lo, hi = cfg.band_ms
            history: list[tuple[int, float]] = []
            for attempt in range(cfg.max_calibrations + 1):
                eager_ms = _time_ms(runner, cfg)
                if lo <= eager_ms <= hi:
                    break
                reason = "too_fast" if eager_ms < lo else "too_slow"
                if not (cfg.calibrate and batch is not None) or attempt == cfg.max_calibrations:
                    raise _Reject(STAGE_TIMING, reason, f"eager {eager_ms:.3f} ms outside [{lo}, {hi}] ms")
                history.append((batch, eager_ms))
                new_batch = next_batch(history, cfg.target, _memory_cap(runner, out, batch))
                new_batch = max(cfg.min_batch, new_batch)
                if new_batch == batch:
                    raise _Reject(STAGE_TIMING, reason, f"eager {eager_ms:.3f} ms; batch cannot move")
                log.append((STAGE_TIMING, f"{eager_ms:.3f} ms at batch {batch}: rescale to {new_batch}"))
                del runner, out
                _free(cfg.device.split(":")[0])
                code, batch = rescale_batch(code, new_batch), new_batch
                try:
                    runner, out = _eager(code, cfg)
                except _Reject as rej:
                    if rej.reason == "oom" and attempt < cfg.max_calibrations:
                        # Too big for this worker's share: halve towards the lower edge instead.
                        code, batch = rescale_batch(code, max(1, new_batch // 2)), max(1, new_batch // 2)
                        runner, out = _eager(code, cfg)
                    else:
                        raise
            log.append((STAGE_TIMING, f"ok {eager_ms:.3f} ms"))
        else:
            log.append((STAGE_TIMING, "skipped (cpu-only)"))

        del out
        out = runner.run(seed=cfg.seed + 3)  # timing runs moved the RNG (and any state): a fresh reference
        # Outputs are compared and freed one at a time: tasks are sized to fill the worker's memory share.
        again = runner.run()
        unseeded_same = _same(out, again, cfg.det_atol, cfg.det_rtol)
        del again
        reseeded = runner.run(seed=cfg.seed + 3)
        seeded_same = _same(out, reseeded, cfg.det_atol, cfg.det_rtol)
        del reseeded
        if not seeded_same:
            # Same model, same inputs, same seed: a different answer means the task is not a function.
            raise _Reject(STAGE_DETERMINISM, "nondeterministic", "two seeded calls on the same inputs differ")
        if not unseeded_same:
            raise _Reject(STAGE_DETERMINISM, "random", "output depends on the RNG state")
        log.append((STAGE_DETERMINISM, "ok"))

        why = _degenerate(out, cfg.atol, cfg.rtol)
        if why:
            raise _Reject(STAGE_DEGENERATE, "constant_output", why)
        log.append((STAGE_DEGENERATE, "ok"))

        fresh = runner.make_inputs(cfg.seed + 2)
        other = runner.run(fresh)
        del fresh
        if _same(out, other, cfg.atol, cfg.rtol):
            raise _Reject(STAGE_INPUTS, "input_insensitive", "different inputs give the same output")
        del other
        log.append((STAGE_INPUTS, "ok"))

        if cfg.compile:
            import torch._dynamo

            torch._dynamo.reset()
            try:
                compiled = torch.compile(runner.model)
                got = runner.run(model=compiled)
            except Exception as exc:
                raise _Reject(STAGE_COMPILE, _error_reason(exc, "compile_error"), _short_exc(exc)) from exc
            if not _same(out, got, cfg.atol, cfg.rtol):
                raise _Reject(STAGE_COMPILE, "compile_mismatch", _mismatch(out, got))
            del got
            if cfg.band_ms is not None:
                compile_ms = _time_ms(runner, cfg, compiled)
            log.append((STAGE_COMPILE, "ok"))
        else:
            log.append((STAGE_COMPILE, "skipped"))
        result = ExecResult(True, "accepted", None, "", code, eager_ms, compile_ms, device_name, tuple(log))
    except _Reject as rej:
        log.append((rej.stage, f"{rej.reason}: {rej.detail}"))
        result = ExecResult(
            False, rej.stage, rej.reason, rej.detail, code, eager_ms, compile_ms, device_name, tuple(log)
        )
    except Exception as exc:
        detail = _short_exc(exc) + " | " + traceback.format_exc(limit=3)[-800:]
        stage = log[-1][0] if log else STAGE_LOAD
        log.append((stage, f"error: {detail}"))
        result = ExecResult(
            False,
            stage,
            _error_reason(exc, "error"),
            detail,
            code,
            eager_ms,
            compile_ms,
            device_name,
            tuple(log),
        )
    finally:
        _free(cfg.device.split(":")[0])
    return replace(result, wall_s=time.perf_counter() - t0, batch_size=batch)


def _mismatch(a: list[Any], b: list[Any]) -> str:
    if len(a) != len(b):
        return f"{len(a)} eager outputs vs {len(b)} compiled"
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape:
            return f"shape {tuple(x.shape)} vs {tuple(y.shape)}"
        if x.dtype != y.dtype:
            return f"dtype {x.dtype} vs {y.dtype}"
        return f"max abs diff {float((x.float() - y.float()).abs().max()):.4g}"
    return ""
