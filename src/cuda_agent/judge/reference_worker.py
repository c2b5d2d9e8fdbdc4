"""The trusted worker: runs the reference, makes inputs, compares outputs, times the baselines.

It never imports candidate code; candidate outputs reach it only as tensor files, bounds-checked as
untrusted (tensorfile.py). Inputs are not sent: both workers draw them from the same seeds (inputs.py).
Started by the judge as `python -I -m cuda_agent.judge.reference_worker FD`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import torch

from cuda_agent.judge import tensorfile
from cuda_agent.judge.channel import serve
from cuda_agent.judge.compare import Tolerance, compare_tensor, degenerate_baselines, describe
from cuda_agent.judge.inputs import draw_inputs, fingerprint
from cuda_agent.judge.opgate import OpGate
from cuda_agent.judge.shared_outputs import SharedOutputReader, UnsafeBuffer
from cuda_agent.judge.timing import COMPILE_WARMUP_CALLS, Sampler
from cuda_agent.task import Task, build_model, check_inputs, flatten_tensors, import_task_module, tensor_bytes

# Timed calls rotate through distinct input sets of up to this many bytes in all (beyond L2 many times
# over; each round also copies them to fresh memory). Both workers draw them on the GPU from seeds, so
# they cost GPU memory in each, not transfer time.
TIMING_SET_BYTES = 512 << 20
MAX_TIMING_SETS = 8
# A candidate's shared output buffer may be this much larger than the expected outputs need (headers,
# rounding to 2 MB), and a probe buffer this large.
SHARED_SLACK_BYTES = 16 << 20
PROBE_BYTES = 16 << 20


class ReferenceWorker:
    def __init__(self) -> None:
        self.module: Any = None
        self.model: Any = None
        self.outputs: list[list[torch.Tensor]] = []
        self.timing_sets: list[list[Any]] = []
        self.samplers: dict[str, Sampler] = {}
        self.input_seeds: list[int] = []
        self.input_prints: list[str] = []
        self.shared = SharedOutputReader()
        self.shared_limit = PROBE_BYTES

    def prepare(
        self, task_path: str, workdir: str, init_seed: int, input_seeds: list[int], timing_seed: int,
        atol: float, rtol: float,
    ) -> dict[str, Any]:  # fmt: skip
        torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default; a task must not inherit others
        self.end_judgment()  # a kept worker serves many judgments of its task: nothing of the last may survive
        source = Path(task_path).read_text()
        task = Task(name=Path(task_path).stem, source=source, path=Path(task_path))
        self.module = import_task_module(task)
        out = Path(workdir)
        torch.manual_seed(init_seed)
        model, init_inputs = build_model(self.module, task.name)
        vary_constant_state(model)
        self.model = model.cuda().eval()
        torch.save({"state_dict": self.model.state_dict(), "init_inputs": init_inputs}, out / "state.pt")

        tol = Tolerance(atol, rtol)
        degenerate: list[list[str]] = []
        specs: list[dict[str, Any]] = []
        recorder = OpGate(poison=False)
        self.input_seeds, self.input_prints = list(input_seeds), []
        for index, seed in enumerate(input_seeds):
            inputs = check_inputs(draw_inputs(self.module, seed), task.name)
            self.input_prints.append(fingerprint(inputs))  # before forward: a task may modify its inputs
            with torch.no_grad(), recorder if index == 0 else contextlib.nullcontext():
                result = self.model(*inputs)
            torch.cuda.synchronize()
            outputs = [t.detach().clone() for t in flatten_tensors(result)]
            if not outputs:
                raise ValueError("Model.forward returned no tensors")
            self.outputs.append(outputs)
            specs = [describe(t) for t in outputs]
            degenerate.append(sorted({d for t in outputs for d in degenerate_baselines(t, tol)}))
        first = draw_inputs(self.module, timing_seed)
        self.shared_limit = 2 * tensor_bytes(self.outputs[0]) + SHARED_SLACK_BYTES
        input_bytes = tensor_bytes(first)
        n_sets = max(1, min(MAX_TIMING_SETS, TIMING_SET_BYTES // max(1, input_bytes)))
        timing_seeds = [timing_seed + k for k in range(n_sets)]
        self.timing_sets = [first, *(draw_inputs(self.module, seed) for seed in timing_seeds[1:])]
        # A trivial answer that passes on every input set means the task cannot tell right from wrong.
        always = sorted(set.intersection(*(set(d) for d in degenerate))) if degenerate else []
        return {
            "outputs": specs, "degenerate": always, "timing_sets": n_sets, "input_bytes": input_bytes,
            "ops": sorted(recorder.seen), "input_prints": self.input_prints, "timing_seeds": timing_seeds,
            "timing_print": fingerprint(self.timing_sets),
        }  # fmt: skip

    def save_inputs(self, workdir: str) -> dict[str, Any]:
        """Write this judgment's input and timing sets as files, for a task whose inputs the candidate
        worker could not reproduce from the seeds. A set that draws differently again (a task reading a
        clock) gets its reference outputs recomputed, so files and outputs always belong together."""
        out = Path(workdir)
        for index, seed in enumerate(self.input_seeds):
            inputs = draw_inputs(self.module, seed)
            if fingerprint(inputs) != self.input_prints[index]:
                with torch.no_grad():
                    result = self.model(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
                self.outputs[index] = [t.detach().clone() for t in flatten_tensors(result)]
            tensorfile.save(inputs, out / f"inputs_{index}.tensors")
        tensorfile.save(self.timing_sets, out / "timing_inputs.tensors")
        return {"sets": len(self.input_seeds)}

    def compare_timing(
        self, set_index: int, path: str, atol: float, rtol: float, shared: bool = False
    ) -> dict[str, Any]:
        """Spot check of a timed call: compare its output with the reference on that timing input set."""
        if not 0 <= set_index < len(self.timing_sets):
            return {"match": False, "reason": f"the timed call reported an unknown input set {set_index}"}
        with torch.no_grad():
            expected = [t.detach() for t in flatten_tensors(self.model(*self.timing_sets[set_index]))]
        return self._compare_file(expected, path, atol, rtol, shared)

    def compare(self, ref_index: int, path: str, atol: float, rtol: float, shared: bool = False) -> dict[str, Any]:
        return self._compare_file(self.outputs[ref_index], path, atol, rtol, shared)

    def _read_outputs(self, path: str, shared: bool) -> Any:
        """What the candidate handed over: a tensor file in its shared buffer, or a file it wrote (read
        into memory with every view checked; the file is removed)."""
        if shared:
            return self.shared.load(path, max_bytes=self.shared_limit, device="cuda")
        try:
            return tensorfile.load(path, device="cuda", trusted=False)
        finally:
            if os.path.exists(path):
                os.unlink(path)

    def read_probe(self, path: str) -> dict[str, Any]:
        """The shared-buffer probe: the values the candidate worker wrote, or why they cannot be read."""
        try:
            values = self.shared.load(path, max_bytes=PROBE_BYTES, device="cuda")
            return {"values": [int(v) for t in values for v in t.flatten().tolist()], "reason": ""}
        except Exception as exc:
            return {"values": None, "reason": f"{type(exc).__name__}: {exc}"[:300]}

    def end_judgment(self) -> dict[str, Any]:
        """Drop everything of the judgment that ended (model, outputs, timing sets, the candidate's
        mapped buffers): a kept worker then holds little more than its CUDA context between judgments."""
        self.model, self.outputs, self.timing_sets, self.samplers = None, [], [], {}
        self.shared.close()
        torch.cuda.empty_cache()
        return {}

    def _compare_file(
        self, expected: list[torch.Tensor], path: str, atol: float, rtol: float, shared: bool
    ) -> dict[str, Any]:
        try:
            produced = self._read_outputs(path, shared)
        except UnsafeBuffer as exc:
            return {"match": False, "reason": f"outputs could not be read: {exc}"[:600]}
        except Exception as exc:
            return {"match": False, "reason": f"outputs could not be read as plain tensors ({exc})"[:600]}
        if not isinstance(produced, list) or len(produced) != len(expected):
            count = len(produced) if isinstance(produced, list) else "?"
            return {"match": False, "reason": f"forward returned {count} tensors, expected {len(expected)}"}
        for k, (ref, got) in enumerate(zip(expected, produced, strict=True)):
            label = "output" if len(expected) == 1 else f"output {k}"
            problem = compare_tensor(ref, got, Tolerance(atol, rtol), label)
            if problem:
                return {"match": False, "reason": problem}
        return {"match": True}

    def warm(self, gpu: bool) -> dict[str, Any]:
        if gpu:
            torch.cuda.init()
            torch.ones(8, device="cuda").add_(1)
            torch.cuda.synchronize()
        return {}

    def free_memory(self) -> dict[str, Any]:
        # Memory this worker cached (e.g. for the candidate outputs it compared) is not the candidate's.
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info()
        return {"free": free, "total": total}

    def time_setup(self, modes: list[str]) -> dict[str, Any]:
        warm: dict[str, float] = {}
        for mode in modes:
            fn = self.model
            if mode == "compile":
                fn = torch.compile(self.model, mode="default")
                with torch.no_grad():
                    for _ in range(COMPILE_WARMUP_CALLS):
                        fn(*self.timing_sets[0])
            sampler = Sampler(fn, self.timing_sets)
            warm[mode] = sampler.warmup()
            self.samplers[mode] = sampler
        return {"warmup_ms": warm}

    def time_round(self, mode: str, samples: int) -> dict[str, Any]:
        result = self.samplers[mode].round(samples)
        return {"samples": result.samples_ms, "wall_ms": result.wall_ms}

    def environment(self) -> dict[str, Any]:
        props = torch.cuda.get_device_properties(0)
        return {
            "gpu": props.name,
            "compute_capability": f"{props.major}.{props.minor}",
            "driver": _driver_version(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda or "",
        }

    def exit(self) -> dict[str, Any]:
        return {}


def vary_constant_state(model: torch.nn.Module) -> list[str]:
    """Replace every constant floating parameter or buffer (default-initialised ones, zeros, norms'
    weight 1 / bias 0 / running stats) with random values of the same sign, drawn from the secret seed.

    Reference and candidate load the same state, so the comparison stays exact; what changes is that a
    submission can no longer assume the default values (e.g. skip an identity BatchNorm)."""
    varied = []
    with torch.no_grad():
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            if not tensor.is_floating_point() or tensor.numel() < 2:
                continue
            first = tensor.flatten()[0]
            if not bool((tensor == first).all()):
                continue
            value = float(first)
            noise = torch.empty_like(tensor).uniform_(0.5, 1.5)
            tensor.copy_(noise * value if value != 0.0 else noise - 1.0)
            varied.append(name)
    return varied


def _driver_version() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:
        pass
    try:
        return Path("/proc/driver/nvidia/version").read_text().split("Kernel Module")[1].split()[0]
    except Exception:
        return "unknown"


def main() -> None:
    worker = ReferenceWorker()
    serve(
        {
            "warm": worker.warm,
            "prepare": worker.prepare,
            "compare": worker.compare,
            "save_inputs": worker.save_inputs,
            "read_probe": worker.read_probe,
            "end_judgment": worker.end_judgment,
            "compare_timing": worker.compare_timing,
            "free_memory": worker.free_memory,
            "time_setup": worker.time_setup,
            "time_round": worker.time_round,
            "environment": worker.environment,
            "exit": worker.exit,
        }
    )


if __name__ == "__main__":
    main()
