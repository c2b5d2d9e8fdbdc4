"""The original CUDA-Agent workspace's one-shot judging path, re-implemented so it can be timed.

The original workspace (`agent_workdir` of BytedTsinghua-SIA/CUDA-Agent) judges a candidate with three
commands, each a fresh Python process that imports torch again:

1. compile: `torch.utils.cpp_extension.load` of `binding.cpp` and every `kernels/*.cu` / `kernels/*.cpp`
   into a build folder emptied first (so every source recompiles), `-O3` / `-O3 --use_fast_math`;
2. verification: loads the extension, builds `Model` and `ModelNew` from `get_init_inputs()`, copies the
   reference's state into `ModelNew`, and compares the outputs on 5 fresh random input sets with
   atol = rtol = 1e-2 (with `torch.nn.functional` blocked while `ModelNew` runs);
3. profiling: loads the extension again, and times `ModelNew`, eager `Model` and `torch.compile(Model)`
   with CUDA events: nothing is cached between candidates, so both baselines are compiled and timed again.

`run_one_shot(submission)` does all of that on a fresh copy of a submission folder and returns the wall time
of each phase (including the interpreter and torch start-up, as an agent sees it), the three times and
whether everything passed. It never raises for a bad submission: a failing phase gives ok=False and the
tail of its output. Standalone use:

    python benchmarks/original_workspace.py examples/row_softmax [--phases compile] [--keep]

This file is also the child program of each phase (`python original_workspace.py _phase NAME ...`); the
children import only torch and the workspace's own files, never the cuda_agent package.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PHASES = ("compile", "verify", "profile")
MODULE_NAME = "cuda_extension"
EXTRA_CFLAGS = ["-O3"]
EXTRA_CUDA_CFLAGS = ["-O3", "--use_fast_math"]
RESULT_PREFIX = "ORIGINAL_RESULT "
ERROR_TAIL_CHARS = 4000


@dataclass(frozen=True)
class OriginalConfig:
    atol: float = 1e-2
    rtol: float = 1e-2
    checks: int = 5  # random input sets in verification
    seed: int = 0
    warmup: int = 10  # profiling: calls before timing, per model
    iters: int = 100  # profiling: timed calls per model, between two CUDA events
    phases: tuple[str, ...] = PHASES
    timeout_s: dict[str, float] = field(
        default_factory=lambda: {"compile": 900.0, "verify": 300.0, "profile": 900.0}
    )
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)  # added to each child's environment
    keep: bool = False  # keep the temporary workspace (its path is in the result)


# ---- parent side ----------------------------------------------------------------------------------


def make_workspace(submission: Path, root: Path) -> Path:
    """A fresh original-style workspace in `root`: infrastructure files, kernels/, model.py, model_new.py."""
    if str(REPO / "src") not in sys.path:
        sys.path.insert(0, str(REPO / "src"))
    from cuda_agent.workspace.files import INFRASTRUCTURE_FILES, template_path

    submission = Path(submission)
    workspace = root / "agent_workdir"
    workspace.mkdir(parents=True)
    for name in INFRASTRUCTURE_FILES:
        shutil.copyfile(template_path(name), workspace / name)
    for name in ("model.py", "model_new.py"):
        shutil.copyfile(submission / name, workspace / name)
    shutil.copytree(
        submission / "kernels", workspace / "kernels", ignore=shutil.ignore_patterns("__pycache__")
    )
    return workspace


def run_one_shot(submission: Path, config: OriginalConfig | None = None) -> dict[str, Any]:
    """Compile, verify and profile `submission` the original way. Returns a dict; never raises."""
    config = config or OriginalConfig()
    submission = Path(submission).resolve()
    result: dict[str, Any] = {
        "submission": str(submission),
        "task": submission.name,
        "ok": False,
        "failed_phase": None,
        "error": "",
        "seconds": {},
        "total_s": 0.0,
        "eager_ms": None,
        "compile_ms": None,
        "candidate_ms": None,
        "children": {},
        "workspace": None,
    }
    root = Path(tempfile.mkdtemp(prefix="original_workspace_"))
    try:
        try:
            workspace = make_workspace(submission, root)
        except Exception as exc:  # a missing file, an unreadable folder
            result["failed_phase"] = "workspace"
            result["error"] = f"{type(exc).__name__}: {exc}"
            return result
        build_dir = workspace / "build" / "forced_compile"
        settings = json.dumps({k: v for k, v in asdict(config).items() if k in ("atol", "rtol", "checks",
                                                                              "seed", "warmup", "iters")})  # fmt: skip
        for phase in config.phases:
            if phase not in PHASES:
                raise ValueError(f"unknown phase {phase!r}; choose from {', '.join(PHASES)}")
            argv = [config.python, str(Path(__file__).resolve()), "_phase", phase,
                    "--workspace", str(workspace), "--build-dir", str(build_dir), "--settings", settings]  # fmt: skip
            timeout = config.timeout_s.get(phase, 900.0)
            ok, seconds, child, error = _run_child(argv, workspace, timeout, {**os.environ, **config.env})
            result["seconds"][phase] = round(seconds, 3)
            result["children"][phase] = child
            if not ok:
                result["failed_phase"] = phase
                result["error"] = error
                break
            if phase == "profile":
                for key in ("eager_ms", "compile_ms", "candidate_ms"):
                    result[key] = child.get(key)
        else:
            result["ok"] = True
        result["total_s"] = round(sum(result["seconds"].values()), 3)
        if config.keep:
            result["workspace"] = str(workspace)
        return result
    except Exception as exc:  # a bug here must not end the benchmark
        result["failed_phase"] = result["failed_phase"] or "harness"
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["total_s"] = round(sum(result["seconds"].values()), 3)
        return result
    finally:
        if not config.keep:
            shutil.rmtree(root, ignore_errors=True)


def _run_child(
    argv: list[str], cwd: Path, timeout: float, env: dict[str, str]
) -> tuple[bool, float, dict[str, Any], str]:
    """Run one phase in a fresh interpreter (its own process group). Returns ok, seconds, result, error."""
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the child and anything it started (ninja, compile workers)
        out, err = proc.communicate()
    seconds = time.monotonic() - start
    child: dict[str, Any] = {}
    for line in out.splitlines():
        if line.startswith(RESULT_PREFIX):
            with contextlib.suppress(ValueError):
                child = json.loads(line[len(RESULT_PREFIX) :])
    if timed_out:
        return False, seconds, child, f"timed out after {timeout:.0f} s\n" + _tail(out + err)
    if proc.returncode != 0 or not child:
        return False, seconds, child, f"exit code {proc.returncode}\n" + _tail(err or out)
    return True, seconds, child, ""


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= ERROR_TAIL_CHARS else "..." + text[-ERROR_TAIL_CHARS:]


# ---- child side: one phase per process ------------------------------------------------------------


def _set_cuda_home() -> None:
    """Point torch at a full CUDA toolkit when CUDA_HOME is unset (torch's guess from `which nvcc` can
    land on a wrapper folder such as /usr/local); the original workspace pins CUDA_HOME the same way."""
    if os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH"):
        return
    nvcc = shutil.which("nvcc")
    candidates = [Path(nvcc).resolve().parent.parent] if nvcc else []
    candidates.append(Path("/usr/local/cuda"))
    for root in candidates:
        if (root / "bin" / "nvcc").exists() and (root / "include" / "cuda_runtime.h").exists():
            os.environ["CUDA_HOME"] = str(root)
            return


def _cublas_flags(cuda_home: str | None) -> tuple[list[str], list[str]]:
    """Include folders and link flags for cuBLAS: `-lcublas` from the toolkit, or from the NVIDIA pip
    wheels beside torch when the toolkit has no cuBLAS (headers and a versioned library only)."""
    lib_dirs = [Path(cuda_home) / d for d in ("lib64", "lib")] if cuda_home else []
    if any((d / "libcublas.so").exists() for d in lib_dirs):
        return [], ["-lcublas"]
    import sysconfig

    for site in dict.fromkeys((sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])):
        for lib in sorted(Path(site).glob("nvidia/*/lib")):
            found = sorted(lib.glob("libcublas.so*"))
            if found:
                include = lib.parent / "include"
                includes = [str(include)] if (include / "cublas_v2.h").exists() else []
                return includes, [f"-L{lib}", f"-l:{found[0].name}", f"-Wl,-rpath,{lib}"]
    return [], ["-lcublas"]  # let the linker say what is missing


def _load_extension(workspace: Path, build_dir: Path) -> Any:
    _set_cuda_home()
    from torch.utils import cpp_extension

    kernels = workspace / "kernels"
    sources = [workspace / "binding.cpp", *sorted(kernels.glob("*.cu")), *sorted(kernels.glob("*.cpp"))]
    includes, ldflags = _cublas_flags(cpp_extension.CUDA_HOME)
    module = cpp_extension.load(
        name=MODULE_NAME,
        sources=[str(s) for s in sources],
        build_directory=str(build_dir),
        extra_cflags=EXTRA_CFLAGS,
        extra_cuda_cflags=EXTRA_CUDA_CFLAGS,
        extra_ldflags=ldflags,
        extra_include_paths=includes,
        with_cuda=True,
        verbose=False,
    )
    sys.modules[MODULE_NAME] = module  # so that model_new.py's `import cuda_extension` gets this build
    return module


def _import_models(workspace: Path) -> tuple[Any, Any, Any, Any]:
    sys.path.insert(0, str(workspace))
    import model
    import model_new

    return model.Model, model_new.ModelNew, model.get_inputs, model.get_init_inputs


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _map_tensors(value: Any, fn: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    return value


def _build_models(workspace: Path, seed: int) -> tuple[Any, Any, Any]:
    import torch

    Model, ModelNew, get_inputs, get_init_inputs = _import_models(workspace)
    init_inputs = _as_list(get_init_inputs())
    torch.manual_seed(seed)
    reference = Model(*init_inputs).cuda().eval()
    torch.manual_seed(seed)
    candidate = ModelNew(*init_inputs).cuda().eval()
    candidate.load_state_dict(reference.state_dict(), strict=False)
    return reference, candidate, get_inputs


def _check_close(actual: Any, expected: Any, atol: float, rtol: float, where: str = "output") -> None:
    import torch

    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise AssertionError(f"{where}: expected a tensor, got {type(actual).__name__}")
        torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True)
    elif isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise AssertionError(f"{where}: expected a sequence of {len(expected)}, got {actual!r:.80}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _check_close(a, e, atol, rtol, f"{where}[{i}]")
    elif isinstance(expected, dict):
        for key, e in expected.items():
            if not isinstance(actual, dict) or key not in actual:
                raise AssertionError(f"{where}: missing key {key!r}")
            _check_close(actual[key], e, atol, rtol, f"{where}[{key!r}]")
    elif actual != expected:
        raise AssertionError(f"{where}: {actual!r} != {expected!r}")


@contextlib.contextmanager
def _functional_blocked() -> Any:
    """While ModelNew runs, every public torch.nn.functional callable raises (as in the original)."""
    import torch.nn.functional as F

    saved = {}
    for name in dir(F):
        value = getattr(F, name)
        if not name.startswith("_") and callable(value):
            saved[name] = value

            def blocked(*args: Any, _name: str = name, **kwargs: Any) -> Any:
                raise RuntimeError(f"torch.nn.functional.{_name} is not allowed in ModelNew")

            setattr(F, name, blocked)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(F, name, value)


def _phase_compile(workspace: Path, build_dir: Path, settings: dict[str, Any]) -> dict[str, Any]:
    if build_dir.exists():
        shutil.rmtree(build_dir)  # the original empties the build folder: every source recompiles
    build_dir.mkdir(parents=True)
    module, startup = _start_process(workspace, build_dir)
    import torch

    built = Path(module.__file__)
    shutil.copy2(built, workspace / built.name)  # the original leaves cuda_extension.so in the workspace
    return {**startup, "torch": torch.__version__}


def _start_process(workspace: Path, build_dir: Path) -> tuple[Any, dict[str, float]]:
    """What each of the original's processes pays before its own work: importing torch and loading the
    extension through `cpp_extension.load` (a full compile in the compile phase, a check after)."""
    t0 = time.monotonic()
    import torch  # noqa: F401

    t1 = time.monotonic()
    module = _load_extension(workspace, build_dir)
    t2 = time.monotonic()
    return module, {"import_torch_s": round(t1 - t0, 3), "load_s": round(t2 - t1, 3)}


def _phase_verify(workspace: Path, build_dir: Path, settings: dict[str, Any]) -> dict[str, Any]:
    _, startup = _start_process(workspace, build_dir)
    import torch

    reference, candidate, get_inputs = _build_models(workspace, settings["seed"])
    max_err = 0.0
    with torch.no_grad():
        for i in range(settings["checks"]):
            torch.manual_seed(settings["seed"] + 1 + i)
            inputs = _map_tensors(_as_list(get_inputs()), lambda t: t.cuda())
            expected = reference(*inputs)
            with _functional_blocked():
                actual = candidate(*_map_tensors(inputs, lambda t: t.clone()))
            _check_close(actual, expected, settings["atol"], settings["rtol"])
            if isinstance(actual, torch.Tensor) and actual.numel():
                max_err = max(max_err, (actual.float() - expected.float()).abs().max().item())
            print(f"[PASS] check {i + 1}/{settings['checks']}", flush=True)
    torch.cuda.synchronize()
    return {**startup, "checks": settings["checks"], "max_abs_err": max_err}


def _time_ms(model: Any, inputs: list[Any], warmup: int, iters: int) -> float:
    import torch

    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            model(*inputs)
        end.record()
        torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def _phase_profile(workspace: Path, build_dir: Path, settings: dict[str, Any]) -> dict[str, Any]:
    _, startup = _start_process(workspace, build_dir)
    import torch

    reference, candidate, get_inputs = _build_models(workspace, settings["seed"])
    torch.manual_seed(settings["seed"])
    inputs = _map_tensors(_as_list(get_inputs()), lambda t: t.cuda())
    candidate_inputs = _map_tensors(inputs, lambda t: t.clone())
    compiled = torch.compile(reference)
    warmup, iters = settings["warmup"], settings["iters"]
    t3 = time.monotonic()
    candidate_ms = _time_ms(candidate, candidate_inputs, warmup, iters)
    eager_ms = _time_ms(reference, inputs, warmup, iters)
    t4 = time.monotonic()
    compile_ms = _time_ms(compiled, inputs, warmup, iters)  # warm-up includes the torch.compile itself
    t5 = time.monotonic()
    print(f"Torch Baseline: {eager_ms * 1000:.3f}us, Torch Compile: {compile_ms * 1000:.3f}us, "
          f"CUDA Extension: {candidate_ms * 1000:.3f}us", flush=True)  # fmt: skip
    return {**startup, "time_candidate_and_eager_s": round(t4 - t3, 3), "compile_and_time_compiled_s": round(t5 - t4, 3),
            "eager_ms": eager_ms, "compile_ms": compile_ms, "candidate_ms": candidate_ms}  # fmt: skip


def _child_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="original_workspace.py _phase")
    parser.add_argument("phase", choices=PHASES)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--build-dir", type=Path, required=True)
    parser.add_argument("--settings", required=True)
    args = parser.parse_args(argv)
    run = {"compile": _phase_compile, "verify": _phase_verify, "profile": _phase_profile}[args.phase]
    result = run(args.workspace.resolve(), args.build_dir.resolve(), json.loads(args.settings))
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


# ---- standalone use ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_phase"]:
        return _child_main(argv[1:])
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("submission", type=Path, help="folder with model.py, model_new.py and kernels/")
    parser.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    parser.add_argument(
        "--iters", type=int, default=100, help="profiling: timed calls per model (default 100)"
    )
    parser.add_argument(
        "--warmup", type=int, default=10, help="profiling: warm-up calls per model (default 10)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    args = parser.parse_args(argv)
    config = OriginalConfig(phases=tuple(args.phases), iters=args.iters, warmup=args.warmup, keep=args.keep)
    result = run_one_shot(args.submission, config)
    print(json.dumps(result, indent=1))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
