"""The untrusted worker: imports the candidate's `cuda_extension` and `ModelNew`, runs and times them.

It draws its inputs from the seeds the judge gives it, with the task's own `get_inputs()` (inputs.py),
and never holds the reference outputs, the tolerances or the verdict: outputs go back as tensor files
for the reference worker to compare. A timed round's seeds come with the command that times it
(`time_round`), and its sampler draws each call's inputs inside the round: the set-up before it
(`prepare_round`) has no input to work on. One process per candidate, killed afterwards, so a CUDA context a
candidate broke is never reused.
Started as `python -I -m cuda_agent.judge.candidate.worker FD` with the candidate folder as cwd.

Everything in this process is the candidate's to read and change (docs/design/trust_boundary.md): no
fact of the reward is decided here. What it holds is chosen so that reading it gains nothing: one
seed per input set, given only when that set is due (a timed round's seeds inside its clock), and no
knowledge of which timed calls will be checked: every call of a round keeps its inputs and output
(`Sampler.kept`) until the parent, after the round, asks for the ones it chose (`dump_call`). The
facts it reports (aliasing of outputs, `aliasing.aliases`) are decided in the reference worker.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Any

import torch

from cuda_agent.judge.candidate import aliasing, kernel_trace
from cuda_agent.judge.candidate.init_skip import random_init_skipped
from cuda_agent.judge.candidate.inputs import draw_inputs, fingerprint
from cuda_agent.judge.candidate.opgate import CaptureGate, OpGate
from cuda_agent.judge.candidate.sampler import Sampler
from cuda_agent.judge.candidate.torch_integrity import TorchSnapshot
from cuda_agent.judge.common import math_policy, tensorfile
from cuda_agent.judge.common.channel import serve
from cuda_agent.judge.common.judge_files import judge_file
from cuda_agent.judge.common.procs import make_undumpable
from cuda_agent.judge.common.shared_outputs import OutputBuffers
from cuda_agent.task import Task, flatten_tensors, import_task_module


def _load(path: str) -> Any:
    """Tensors the judge wrote (never files the candidate wrote): memory-mapped, then copied to the GPU."""
    return tensorfile.load(judge_file(path), device="cuda", trusted=True)


class InputSource:
    """Where a call's inputs come from: drawn from a seed with the task's get_inputs() (the normal way),
    or read from a file the reference wrote (for tasks whose inputs a seed does not reproduce)."""

    def __init__(self, task_path: str) -> None:
        path = Path(judge_file(task_path))
        self.task = import_task_module(
            Task(name=path.stem, source=path.read_text(), path=path), "task_inputs"
        )
        self.transforms: list[Any] | None = None  # the reference's input audit's (state.pt), for every draw
        self.signs: dict[int, float] | None = None  # the reference's sign audit's (state.pt), for every draw
        self.outliers: dict[int, float] | None = None  # the reference's outlier audit's (state.pt), likewise

    def get(self, seed: int | None, path: str | None) -> Any:
        if path is not None:
            return _load(path)
        if seed is None:
            raise ValueError("an input seed or an input file is needed")
        return draw_inputs(self.task, seed, transforms=self.transforms, signs=self.signs, outliers=self.outliers)


class CandidateError(RuntimeError):
    """The candidate misbehaved in a way the judge names (bad constructor, bad outputs)."""


class RuleViolation(RuntimeError):
    """The candidate broke a rule (changed global math settings): the judge rejects it."""


def math_settings() -> dict[str, Any]:
    """PyTorch's global precision settings: both workers start from the judge's policy (common/math_policy.py:
    no TF32 in matmuls or convolutions, fp32 reductions), and the candidate must keep them."""
    return {
        "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "matmul.fp16_reduced": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "matmul.bf16_reduced": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
    }


def _plain_outputs(result: Any) -> list[torch.Tensor]:
    """A forward's outputs, each a plain torch.Tensor (a subclass could run code when the judge reads it)."""
    outputs = flatten_tensors(result)
    for k, t in enumerate(outputs):
        if type(t) is not torch.Tensor:
            raise CandidateError(f"output {k} is a {type(t).__name__}; return plain torch.Tensor outputs")
    return outputs


class CandidateWorker:
    def __init__(self) -> None:
        self.model: Any = None
        self.sampler: Sampler | None = None
        self.inputs: InputSource | None = None
        self.outputs = OutputBuffers()
        self.round_inputs: list[Any] = []

    def warm(self, gpu: bool) -> dict[str, Any]:
        """Before any candidate code exists: create the CUDA context and run the profiler once, whose
        first session costs seconds (CUPTI start-up) that would otherwise land on the coverage gate. Also
        made undumpable, so that while it waits as a spare no other candidate (same sandbox user) can read
        or write its memory (common/procs.py)."""
        self.undumpable = make_undumpable()
        if not gpu:
            return {"undumpable": self.undumpable}
        began = time.monotonic()
        math_policy.pin()
        torch.cuda.init()
        initialised = time.monotonic()
        kernel_trace.warm_profiler()
        # What the GPU part costs, by part (judge_throughput's account of the lane: trusted/pool.py warmups).
        seconds = {"cuda_init": initialised - began, "profiler": time.monotonic() - initialised}
        return {"undumpable": self.undumpable, "seconds": seconds}

    def load(self, module_dir: str, state_path: str, task_path: str) -> dict[str, Any]:
        math_policy.pin()  # the reference's settings (common/math_policy.py); the candidate must keep them
        torch.cuda.init()
        self.settings = math_settings()
        self.inputs = InputSource(task_path)  # the task's code, before any of the candidate's
        sys.path.insert(0, module_dir)
        state = torch.load(judge_file(state_path), map_location="cuda", weights_only=True)
        self.inputs.transforms = state.get("input_transforms")
        self.inputs.signs = state.get("input_signs")
        self.inputs.outliers = state.get("input_outliers")
        self.torch_snapshot = TorchSnapshot()  # torch as the judge's code here uses it, before any candidate code
        self.init_inputs = state["init_inputs"]
        model, gate = self._construct(state["state_dict"], first=True)
        self.model = model
        self.check_settings("loading model_new and cuda_extension")
        return {"captured": dict(gate.forbidden)}

    def _construct(self, state_dict: dict[str, Any], first: bool) -> tuple[torch.nn.Module, CaptureGate]:
        """A ModelNew built and given `state_dict`, its whole life before its first call -- import (the
        first time), construction, load_state_dict -- under the capture gate: PyTorch ops captured into a
        CUDA graph there would replay in forward with no dispatch at call time (opgate.CaptureGate)."""
        gate = CaptureGate()
        with gate:
            if first:
                try:
                    importlib.import_module("cuda_extension")
                except Exception as exc:
                    raise CandidateError(f"import cuda_extension failed: {type(exc).__name__}: {exc}") from exc
            try:
                model_new = importlib.import_module("model_new")
            except Exception as exc:
                raise CandidateError(f"import model_new failed: {type(exc).__name__}: {exc}") from exc
            if not hasattr(model_new, "ModelNew"):
                raise CandidateError("model_new.py defines no class ModelNew")
            try:
                with random_init_skipped():  # load_state_dict replaces them: no draws (init_skip.py)
                    model = model_new.ModelNew(*self.init_inputs)
            except Exception as exc:
                raise CandidateError(
                    f"ModelNew(*get_init_inputs()) failed{'' if first else ' the second time'}: "
                    f"{type(exc).__name__}: {exc}; ModelNew must take the same constructor arguments as Model"
                    + ("" if first else ", and be constructible more than once (the weight pair)")
                ) from exc
            if not isinstance(model, torch.nn.Module):
                raise CandidateError("ModelNew must be a torch.nn.Module")
            model = model.cuda()
            try:
                model.load_state_dict(state_dict, strict=True)
            except Exception as exc:
                raise CandidateError(
                    f"ModelNew cannot load the reference's state_dict: {exc}; keep Model's parameters and "
                    "buffers (same names and shapes) so the judge can copy the reference weights"
                ) from exc
        return model.eval(), gate

    def run_variant(self, state_path: str, inputs_path: str, output_path: str, shared: bool = False) -> dict[str, Any]:
        """The weight pair (trusted/response_probe.py): a second ModelNew, given the state at `state_path`
        (the loaded parameters with their lowest mantissa bits moved), run once on the inputs at
        `inputs_path`, its outputs handed over, then dropped. The first ModelNew stays as it was."""
        state = torch.load(judge_file(state_path), map_location="cuda", weights_only=True)
        model, capture = self._construct(state["state_dict"], first=False)
        del state
        self.check_settings("constructing a second ModelNew")
        inputs = self._inputs(None, inputs_path)
        drawn = fingerprint(inputs)
        gate = OpGate(poison=True)
        with torch.no_grad(), gate:
            result = model(*inputs)
        torch.cuda.synchronize()
        self.check_settings("the second ModelNew's forward")
        outputs = _plain_outputs(result)
        aliases = aliasing.aliases(outputs, list(inputs))
        handed = self._hand_over(outputs, output_path, shared)
        del model, result, outputs, inputs
        torch.cuda.empty_cache()
        return {"forbidden": dict(gate.forbidden), "captured": dict(capture.forbidden), "input_print": drawn,
                "aliases": aliases, **handed}  # fmt: skip

    def check_settings(self, when: str) -> None:
        now = math_settings()
        changed = {k: (v, now[k]) for k, v in self.settings.items() if now[k] != v}
        if changed:
            listed = ", ".join(f"{k}: {a} -> {b}" for k, (a, b) in changed.items())
            raise RuleViolation(f"{when} changed PyTorch's math settings ({listed}); keep the defaults")
        snapshot = getattr(self, "torch_snapshot", None)
        patched = snapshot.changes() if snapshot is not None else []
        if patched:
            raise RuleViolation(
                f"{when} changed PyTorch itself ({', '.join(patched[:4])}): patching torch's classes or functions "
                "(whatever the spelling: setattr, functools.update_wrapper, __dict__) is not allowed"
            )

    def _inputs(self, seed: int | None, path: str | None) -> Any:
        assert self.inputs is not None, "load first"
        return self.inputs.get(seed, path)

    def _hand_over(self, outputs: list[torch.Tensor], output_path: str, shared: bool) -> dict[str, Any]:
        """Outputs to the reference: into the shared buffers (the path to read them at), or a file. Each as
        `tensorfile.handed`: a view that reaches far past its own elements goes as its values."""
        handed = [tensorfile.handed(t.detach()) for t in outputs]
        if shared:
            return {"shared_path": self.outputs.write(handed)}
        tensorfile.save(handed, output_path)
        return {}

    def share_probe(self, nonce: int) -> dict[str, Any]:
        """Can outputs go through shared memory here? Write a nonce there for the reference to read."""
        try:
            return {"shared_path": self.outputs.write([torch.tensor([nonce], dtype=torch.int64)])}
        except Exception as exc:  # no memfd or seals on this kernel: the judge uses files
            return {"shared_path": None, "reason": f"{type(exc).__name__}: {exc}"}

    def run(
        self, output_path: str, poison: bool, inputs_seed: int | None = None, inputs_path: str | None = None,
        shared: bool = False, trace: bool = False,
    ) -> dict[str, Any]:  # fmt: skip
        inputs = self._inputs(inputs_seed, inputs_path)
        kernels: dict[str, float] = {}
        drawn = fingerprint(inputs)  # before forward, which may write into its inputs
        gate = OpGate(poison=poison)
        with torch.no_grad(), gate:
            if trace:  # the kernels of this call alone (kernel_trace.py), for the parent's coverage gate
                result, kernels = kernel_trace.traced(lambda: self.model(*inputs))
            else:
                result = self.model(*inputs)
        torch.cuda.synchronize()  # surfaces asynchronous kernel faults here, not later
        self.check_settings("forward")
        outputs = _plain_outputs(result)
        aliases = aliasing.aliases(outputs, list(inputs))
        handed = self._hand_over(outputs, output_path, shared)
        return {"forbidden": dict(gate.forbidden), "input_print": drawn, "kernels": kernels, "aliases": aliases,
                **handed}  # fmt: skip

    def profile(self, inputs_seed: int | None = None, inputs_path: str | None = None) -> dict[str, Any]:
        """One forward under the CUDA profiler: which kernels ran and for how long (coverage gate)."""
        from torch.profiler import ProfilerActivity, profile

        inputs = self._inputs(inputs_seed, inputs_path)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof, torch.no_grad():
            self.model(*inputs)
            torch.cuda.synchronize()
        return {"kernels": kernel_trace.device_kernels(prof)}

    def dump_call(self, index: int, output_path: str, shared: bool = False) -> dict[str, Any]:
        """Hand over the output of call `index` of the last timed round (chosen by the parent after it)."""
        assert self.sampler is not None
        if not 0 <= index < len(self.sampler.kept):
            raise CandidateError(f"no timed call {index} in the last round")
        inputs, result = self.sampler.kept[index]
        outputs = flatten_tensors(result)
        if any(type(t) is not torch.Tensor for t in outputs):
            raise CandidateError("a timed call returned something other than plain torch.Tensor outputs")
        self.check_settings("a timed forward")  # a hook in torch's classes would run in the hand-over below
        # Every call of the round is still kept: an output sharing memory with another call's is a buffer
        # kept between calls (aliasing.KEPT), never a block the allocator reused.
        others = [t for j, (_, other) in enumerate(self.sampler.kept) if j != index for t in flatten_tensors(other)]
        aliases = [a + k for a, k in zip(aliasing.aliases(outputs, list(inputs)), aliasing.kept(outputs, others),
                                         strict=True)]  # fmt: skip
        return {"aliases": aliases, **self._hand_over(outputs, output_path, shared)}

    def time_setup(self, warmup_seeds: list[int] | None = None, warmup_path: str | None = None) -> dict[str, Any]:
        """Warm up on sets of their own (never the timed or the verification content)."""
        if warmup_path is not None:
            sets = [self._inputs(None, warmup_path)]
        else:
            sets = [self._inputs(seed, None) for seed in warmup_seeds or []]
        self.sampler = Sampler(self.model, sets, draw=lambda seed: self._inputs(seed, None))
        return {"warmup_ms": self.sampler.warmup(), "host_ms": self.sampler.host_ms, "flush_ms": self.sampler.flush_ms,
                "draw_ms": self.sampler.draw_ms}  # fmt: skip

    def time_pad(self, pad_ms: float, flush_ms: float | None = None, cover_ms: float | None = None,
                 release: bool | None = None) -> dict[str, Any]:  # fmt: skip
        """The pad length, flush allowance and draw cover the parent chose for every contender
        (candidate/sampler.py)."""
        assert self.sampler is not None, "time_setup first"
        self.sampler.set_pad(pad_ms, flush_ms, cover_ms, release)
        return {}

    def prepare_round(self, samples: int, inputs_path: str | None = None) -> dict[str, Any]:
        """The next round's set-up, outside the parent's clock around `time_round` (charged as per-call
        cost it made honest candidates 10-20 us per call slower): the last round's calls released, CUDA
        events. No input of the round exists yet, except in input-file mode (a task whose inputs a seed
        does not reproduce), where they are read here from the file the reference wrote."""
        assert self.sampler is not None, "time_setup first"
        # The last timed round's check, here outside the parent's clock: in `time_round` it lay between the
        # loop and the reply, inside the clock (~0.05-0.07 ms a round, a per-call host overhead the
        # reference's rounds do not have). Every timed round is followed by this or by `dump_call`'s.
        self.check_settings("a timed forward")
        self.sampler.prepare(samples)
        self.round_inputs = list(_load(inputs_path)) if inputs_path is not None else []
        return {}

    def time_round(self, samples: int, keep: int | None = None, trace: bool = False,
                   seeds: list[int] | None = None) -> dict[str, Any]:  # fmt: skip
        """A timed round: each call's inputs drawn inside it from `seeds` (or those of input-file mode).
        With `trace`, the kernels it ran too (the coverage gate's evidence; the parent decides which
        rounds, with the seeds): then the inputs are drawn first, so that the trace holds the round's
        calls and not the draw's kernels (a traced round's samples are not used)."""
        assert self.sampler is not None, "time_setup first"
        fresh, self.round_inputs = self.round_inputs, []
        if trace:
            if not fresh:
                fresh = [self._inputs(seed, None) for seed in seeds or []]
            busy: list[float] = []  # the candidate's device time in the round (observed_timing.py)
            reply, kernels = kernel_trace.traced(lambda: self._time_round(samples, keep, fresh, None), busy=busy)
            return {**reply, "kernels": kernels, "busy_us": busy[0] if busy else None}
        return self._time_round(samples, keep, fresh, seeds)

    def _time_round(self, samples: int, keep: int | None, fresh: list[Any], seeds: list[int] | None) -> dict[str, Any]:
        assert self.sampler is not None
        if fresh:
            result = self.sampler.round(samples, keep, fresh=fresh)
        else:
            result = self.sampler.round(samples, keep, seeds=seeds or None)
        return result.reply()

    def check_after_timing(self) -> dict[str, Any]:
        """The settings check after the last timed round (see `prepare_round`), outside the clock."""
        self.check_settings("a timed forward")
        return {}

    def exit(self) -> dict[str, Any]:
        return {}


def main() -> None:
    worker = CandidateWorker()
    serve(
        {
            "warm": worker.warm,
            "load": worker.load,
            "run": worker.run,
            "run_variant": worker.run_variant,
            "profile": worker.profile,
            "dump_call": worker.dump_call,
            "share_probe": worker.share_probe,
            "time_setup": worker.time_setup,
            "prepare_round": worker.prepare_round,
            "time_round": worker.time_round,
            "time_pad": worker.time_pad,
            "check_after_timing": worker.check_after_timing,
            "exit": worker.exit,
        }
    )


if __name__ == "__main__":
    main()
