"""What the workspace's `utils/` commands run: the judge's own build, verification and timing.

`bash utils/compile.sh`, `python3 -m utils.verification` and `python3 -m utils.profiling` call these, so
what the agent sees while it works is what the final reward says.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from cuda_agent.judge import (
    MODULE_NAME,
    BuildConfig,
    JudgeConfig,
    JudgeUnavailable,
    default_arch,
    shared_caches_from_env,
)
from cuda_agent.task import TaskError, load_task


def agent_build_config() -> BuildConfig:
    """The build of the agent's own checks (compile, verification, profiling). No verdict trusts it, so
    it reads the episode's shared cache layer ($CUDA_AGENT_SHARED_CACHE: the PCH and every object already
    built) and may take the judge's binding.cpp object from it too; the final judgment compiles its own.
    Without it a verification in the sandbox rebuilt the PCH and the binding every time (36-41 s per
    command in the H200 eval run, against ~14 s for compile.sh, which already read the shared layer)."""
    return BuildConfig(arch=default_arch(), read_only_caches=shared_caches_from_env(), private_judge_binding=False)


def compile_main(root: Path = Path(".")) -> int:
    """Build kernels/ and check what the judge checks before it needs a GPU: model.py is a valid task,
    model_new.py and kernels/ pass the static checks, kernels/ builds. Exit 0 only when all of it passed;
    the module is installed whenever the build itself succeeded (so it can be tried while fixing the rest)."""
    from cuda_agent.judge import Status, check_on_cpu

    config = JudgeConfig(build=agent_build_config())
    verdict, result = check_on_cpu(root, None, config, out_dir=root / "build")
    built = result is not None and result.ok and result.module_path is not None
    if built:
        assert result is not None and result.module_path is not None
        shutil.copyfile(result.module_path, root / f"{MODULE_NAME}.so")
    how = f"in {result.seconds:.1f} s ({len(result.compiled)} compiled, {len(result.cached)} reused)" if result else ""
    if verdict.status is Status.BUILT:
        print(f"Compile success: {MODULE_NAME}.so {how}; model.py and the static checks passed too")
        return 0
    failures = verdict.checks.get("failures", {})
    if built:
        print(f"Built {MODULE_NAME}.so {how}, but the judge would not accept this submission:", file=sys.stderr)
    if "build" in failures:
        print("Compilation failed:", file=sys.stderr)
        print(verdict.compile_log, file=sys.stderr)
    if "static" in failures:
        print("Static checks failed (the judge rejects this submission):", file=sys.stderr)
        for finding in verdict.checks.get("static", []):
            print(f"  {finding}", file=sys.stderr)
    if "task" in failures:
        print(f"model.py is not a valid task: {failures['task']}", file=sys.stderr)
    print(f"FAIL [{verdict.status.value}]: {verdict.reason}", file=sys.stderr)
    return 1


def _judge(root: Path, timed: bool) -> int:
    from cuda_agent.judge import judge

    try:
        task = load_task(root / "model.py")
    except TaskError as exc:
        print(f"model.py is not a valid task: {exc}", file=sys.stderr)
        return 2
    try:
        verdict = judge(root, task=task, config=JudgeConfig(build=agent_build_config(), time_candidate=timed))
    except JudgeUnavailable as exc:
        print(f"cannot run here: {exc}", file=sys.stderr)
        return 3
    status = "PASS" if verdict.passed else "FAIL"
    print(f"{status} [{verdict.status.value}] reward {verdict.reward:+d}: {verdict.reason}")
    if verdict.compile_log:
        print(verdict.compile_log)
    t = verdict.timing
    if t:
        print(f"  candidate      {t.candidate_ms:9.4f} ms  (IQR {t.candidate.p25:.4f}-{t.candidate.p75:.4f})")
        print(
            f"  eager          {t.eager_ms:9.4f} ms  speedup {t.speedup_vs_eager:.3f}x (95% low {t.speedup_vs_eager_low:.3f})"
        )
        print(f"  torch.compile  {t.compile_ms:9.4f} ms  speedup {t.speedup_vs_compile:.3f}x "
              f"(95% low {t.speedup_vs_compile_low:.3f})")  # fmt: skip
    return 0 if verdict.passed else 1


def verification_main(root: Path = Path(".")) -> int:
    return _judge(root, timed=False)


def profiling_main(root: Path = Path(".")) -> int:
    return _judge(root, timed=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = {"compile": compile_main, "verification": verification_main, "profiling": profiling_main}
    if not argv or argv[0] not in commands:
        print(f"usage: python -m cuda_agent.workspace.commands {{{','.join(commands)}}}", file=sys.stderr)
        return 2
    from cuda_agent.judge import ToolchainError

    try:
        return commands[argv[0]]()
    except ToolchainError as exc:  # no nvcc / compiler here: the agent (or user) needs the fix, not a traceback
        print(f"cannot build here: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
