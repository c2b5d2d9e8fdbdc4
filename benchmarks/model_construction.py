"""What building ModelNew costs the candidate worker, with torch.nn.init's random draws and without them
(src/cuda_agent/judge/candidate/init_skip.py).

The candidate worker builds `Model`-shaped ModelNew on the CPU, moves it to the GPU and loads the
reference's state_dict, which replaces every parameter: the initial draws are thrown away. This measures,
per KernelBench task, that path (build, move to `--device`, load a state dict already there) as it was
(draws) and as the worker does it now (random initialisers zero instead), both in this process,
alternating, the median of `--reps`. The reference's own construction is unchanged (its initial values set
the scale of the generic point, trusted/perturb.py) and is not measured here.

    python benchmarks/model_construction.py [--tasks .cache/kernelbench] [--min-params 10e6]
        [--max-params 1.2e9] [--reps 3] [--device cpu|cuda] [--out DIR]

`--tasks` is a KernelBench checkout's `KernelBench` folder (level1..3); tasks are chosen by their parameter
count (counted on the meta device). Prints a table and the ratio of the totals; writes
OUT/model_construction.json. Exits 1 when a task built with skipped draws differs from one built with
them in anything but its parameter values (names, shapes, dtypes, buffers).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402

from cuda_agent.judge.candidate.init_skip import random_init_skipped  # noqa: E402


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kb_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parameter_count(module: ModuleType) -> int:
    with torch.device("meta"):
        model = module.Model(*module.get_init_inputs())
    return sum(p.numel() for p in model.parameters())


def layout(model: torch.nn.Module) -> list[tuple[str, tuple[int, ...], str]]:
    """Everything load_state_dict checks and the candidate's code could see, except the values."""
    return [(name, tuple(t.shape), str(t.dtype)) for name, t in model.state_dict().items()]


def build_seconds(module: ModuleType, skip: bool, device: str, state: dict[str, Any]) -> tuple[float, list[Any]]:
    """The worker's path (candidate/worker.py `_construct`): build on the CPU, move, load the state dict."""
    began = time.perf_counter()
    if skip:
        with random_init_skipped():
            model = module.Model(*module.get_init_inputs())
    else:
        model = module.Model(*module.get_init_inputs())
    model = model.to(device)
    model.load_state_dict(state, strict=True)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - began
    shape = layout(model)
    del model
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return seconds, shape


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, default=ROOT / ".cache" / "kernelbench")
    parser.add_argument("--min-params", type=float, default=10e6)
    parser.add_argument("--max-params", type=float, default=1.2e9, help="skip larger models (CPU memory)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="where the model is moved and its state dict is (cuda on a GPU)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    args = parser.parse_args(argv)
    if not any(args.tasks.glob("level[123]")):
        print(f"error: no level1..3 folders under {args.tasks}: pass --tasks <KernelBench checkout>/KernelBench")
        return 2
    chosen: list[tuple[Path, ModuleType, int]] = []
    uncounted: list[str] = []
    for path in sorted(args.tasks.glob("level[123]/*.py")):
        try:
            module = load(path)
            count = parameter_count(module)
        except Exception:  # a task the meta device cannot build is not one this measures: named below
            uncounted.append(f"{path.parent.name}/{path.stem}")
            continue
        if args.min_params <= count <= args.max_params:
            chosen.append((path, module, count))
    if uncounted:
        print(f"{len(uncounted)} tasks could not be built on the meta device to count their parameters and are "
              f"left out: {', '.join(uncounted[:8])}{' ...' if len(uncounted) > 8 else ''}")
    print(f"{len(chosen)} tasks with {args.min_params:.0e}-{args.max_params:.0e} parameters, "
          f"{args.reps} builds each way, moved to {args.device} and loaded, torch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads", flush=True)
    print(f"{'task':58s} {'params':>8s} {'draws s':>8s} {'skipped s':>9s} {'ratio':>6s}")
    rows, mismatched = [], []
    for index, (path, module, count) in enumerate(chosen, 1):
        drawn, skipped = [], []
        state = module.Model(*module.get_init_inputs()).to(args.device).state_dict()  # the reference's, handed over
        for _ in range(args.reps):
            seconds, shape_drawn = build_seconds(module, False, args.device, state)
            drawn.append(seconds)
            seconds, shape_skipped = build_seconds(module, True, args.device, state)
            skipped.append(seconds)
            if shape_drawn != shape_skipped:
                mismatched.append(str(path))
        del state
        row = {"task": f"{path.parent.name}/{path.stem}", "parameters": count,
               "draws_s": statistics.median(drawn), "skipped_s": statistics.median(skipped)}  # fmt: skip
        rows.append(row)
        print(f"{row['task'][:58]:58s} {count / 1e6:7.1f}M {row['draws_s']:8.3f} {row['skipped_s']:9.3f} "
              f"{row['draws_s'] / max(row['skipped_s'], 1e-9):6.1f}  [{index}/{len(chosen)}]", flush=True)
    total_drawn = sum(r["draws_s"] for r in rows)
    total_skipped = sum(r["skipped_s"] for r in rows)
    ratio = total_drawn / max(total_skipped, 1e-9)
    print(f"total: {total_drawn:.2f} s with draws, {total_skipped:.2f} s skipped: {ratio:.1f}x less per build "
          f"(the worker builds ModelNew once per judgment, twice with the weight pair)")
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"rows": rows, "total_draws_s": total_drawn, "total_skipped_s": total_skipped, "ratio": ratio,
              "threads": torch.get_num_threads(), "torch": torch.__version__, "device": args.device,
              "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else None, "uncounted": uncounted,
              "layout_mismatches": mismatched}  # fmt: skip
    (args.out / "model_construction.json").write_text(json.dumps(report, indent=1))
    if mismatched:
        print(f"FAIL: skipped draws changed the layout of {', '.join(sorted(set(mismatched)))}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
