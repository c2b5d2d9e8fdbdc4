"""The reproducibility bundle of an evaluation run: everything a reader needs to check its figures.

RUN/ holds
  run.json           how the run was made (mode, tasks, levels, episodes, model, judge settings), written
                     once at the start and checked on resume
  environment.json   the fingerprint: GPU, driver, torch, CUDA, nvcc, python, our version and commit, the
                     judge's timing PROTOCOL_VERSION, the tolerances, and every environment the verdicts
                     report (the judge's own fingerprint of where it measured)
  records.jsonl      one EvalRecord per (task, episode) (eval/records.py)
  submissions/<task>/ep<k>/   each final submission in our layout (model.py, model_new.py, kernels/,
                     .task.json naming the task), which `eval --submissions` and `--recheck` judge again
  verdicts/<task>/ep<k>.json  the full verdict (timing medians, quartiles, minima, sample counts, rounds)
  episodes/<task>/ep<k>/      the agent's workspace and trajectory (agent runs only)
  manifest.json      sha256 of every submission file, so a changed bundle is detectable

Nothing here judges or runs a model; the runner and --recheck call these helpers.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

TASK_META = ".task.json"
RUN_FORMAT = "cuda-agent.eval-run/1"


def write_json(path: Path, data: Any) -> Path:
    """Atomic JSON write (temporary file, fsync, rename): a kill never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True, default=str)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def episode_dir(kind: str, slug: str, episode: int) -> str:
    """`submissions/<slug>/ep0`, `verdicts/<slug>/ep0.json`, `episodes/<slug>/ep0` (relative to RUN/)."""
    if kind == "verdicts":
        return f"verdicts/{slug}/ep{episode}.json"
    return f"{kind}/{slug}/ep{episode}"


# ---- submissions -----------------------------------------------------------------------------------------


def save_submission(source: Path, dest: Path, task_source: str, meta: dict[str, Any]) -> Path:
    """Copy the judged files of a submission (model_new.py, kernels/ regular files) to `dest`, with the
    task as model.py and `meta` as .task.json; what the judge never reads (build outputs, caches) stays."""
    dest = Path(dest)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    model_new = Path(source) / "model_new.py"
    if model_new.is_file() and not model_new.is_symlink():
        shutil.copyfile(model_new, tmp / "model_new.py")
    kernels = Path(source) / "kernels"
    if kernels.is_dir():
        for path in sorted(kernels.rglob("*")):
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
                target = tmp / "kernels" / path.relative_to(kernels)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
    (tmp / "kernels").mkdir(exist_ok=True)
    (tmp / "model.py").write_text(task_source, encoding="utf-8")
    (tmp / TASK_META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(tmp, dest)
    return dest


def file_digests(folder: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            out[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def write_manifest(run_dir: Path) -> Path:
    """sha256 of every file under RUN/submissions, per submission."""
    root = Path(run_dir) / "submissions"
    entries: dict[str, dict[str, str]] = {}
    if root.is_dir():
        for meta in sorted(root.rglob(TASK_META)):
            entries[meta.parent.relative_to(run_dir).as_posix()] = file_digests(meta.parent)
    return write_json(Path(run_dir) / "manifest.json", {"submissions": entries})


# ---- environment ---------------------------------------------------------------------------------------


def _run(cmd: list[str], timeout: float = 20.0) -> str | None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _nvcc_version() -> str | None:
    candidates = [shutil.which("nvcc")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(str(Path(home) / "bin" / "nvcc"))
    for nvcc in candidates:
        if nvcc and Path(nvcc).is_file():
            text = _run([nvcc, "--version"])
            if text:
                return text.splitlines()[-1].strip()
    return None


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    return _run(["git", "-C", str(here), "rev-parse", "HEAD"], timeout=5)


def _git_dirty() -> bool | None:
    """Whether our source tree has uncommitted changes (then the commit alone does not pin the code)."""
    here = Path(__file__).resolve().parents[1]
    status = _run(["git", "-C", str(here), "status", "--porcelain", "--", "."], timeout=10)
    return None if status is None else bool(status)


def protocol_version() -> str | None:
    """The judge's timing protocol version (it names the method behind every speedup)."""
    from cuda_agent.eval.judges import judge_name

    try:
        return str(judge_name("PROTOCOL_VERSION", "candidate.sampler", "decide.timing_stage", "timing"))
    except ImportError:
        return None


def fingerprint(settings: dict[str, Any], backend: str) -> dict[str, Any]:
    """Where this process runs and what the judge is told to apply. The verdicts' own `environment`
    (where the judge measured, which for a remote judge is another machine) is added by `environments`."""
    from cuda_agent import __version__

    gpus = _run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    try:
        import torch

        torch_info: dict[str, Any] = {"version": torch.__version__, "cuda": torch.version.cuda,
                                      "cuda_available": torch.cuda.is_available()}  # fmt: skip
    except ImportError:  # pragma: no cover - torch is a hard dependency
        torch_info = {}
    return {
        "cuda_agent": {"version": __version__, "commit": _git_commit(), "uncommitted_changes": _git_dirty()},
        "judge": {
            "protocol_version": protocol_version(),
            "tolerance": {"atol": settings.get("atol"), "rtol": settings.get("rtol")},
            "settings": settings,
            "backend": backend,
        },
        "host": {"python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine()},
        "gpus": [line.strip() for line in gpus.splitlines()] if gpus else [],
        "torch": torch_info,
        "nvcc": _nvcc_version(),
    }


def environments(run_dir: Path) -> list[dict[str, Any]]:
    """The distinct judge environments (GPU, driver, torch, CUDA, nvcc) the run's verdicts report."""
    seen: dict[str, dict[str, Any]] = {}
    root = Path(run_dir) / "verdicts"
    if root.is_dir():
        for path in sorted(root.rglob("*.json")):
            try:
                env = (read_json(path).get("verdict") or {}).get("environment")
            except (OSError, ValueError):
                continue
            if env:
                seen.setdefault(json.dumps(env, sort_keys=True), env)
    return list(seen.values())


def write_environment(run_dir: Path, settings: dict[str, Any], backend: str) -> Path:
    data = fingerprint(settings, backend)
    data["verdict_environments"] = environments(run_dir)
    return write_json(Path(run_dir) / "environment.json", data)
