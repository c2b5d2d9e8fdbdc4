"""The judge: build a submission, verify it against the reference, time it, and give the reward.

It imports nothing from the agent, synthesis, RL or benchmark code. `judge()` is the entry point;
`JudgeService` keeps workers warm across judgments. The layout shows the trust boundary
(docs/design/trust_boundary.md has the table of modules, where each runs and which facts it establishes):

- `candidate/`: code loaded into the candidate's own process (its worker, the op gate, the sampler, the
  input draw). The candidate can read and change all of it there; nothing it reports from there is
  believed unless checked elsewhere. It imports only `candidate/`, `common/` and `cuda_agent.task`.
- `trusted/`: workers and machinery that never run candidate code: the reference worker (reference
  outputs, comparison, audits, baselines), the build and its static checks, sandbox, freeze, pool, caches.
- `decide/`: the parent's decisions: the judgment's stages, coverage, timing statistics, reward, verdict.
- `common/`: plumbing both sides load (the request channel, the tensor file format, the output hand-over);
  it decides nothing, and its trusted end treats what it reads as untrusted bytes.
- `config.py`, `errors.py`: the judge's settings and the error that means it could not run.

Public names are re-exported here lazily (PEP 562), so importing the package loads nothing: the
candidate worker imports `cuda_agent.judge.candidate.worker` without pulling in a trusted module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "judge": "cuda_agent.judge.decide.entry",
    "JudgeService": "cuda_agent.judge.decide.service",
    "Judgment": "cuda_agent.judge.decide.judgment",
    "check_on_cpu": "cuda_agent.judge.decide.cpu_checks",
    "Verdict": "cuda_agent.judge.decide.verdict",
    "Status": "cuda_agent.judge.decide.verdict",
    "Timing": "cuda_agent.judge.decide.verdict",
    "Environment": "cuda_agent.judge.decide.verdict",
    "milestone_reward": "cuda_agent.judge.decide.reward",
    "SPEEDUP_THRESHOLD": "cuda_agent.judge.decide.reward",
    "JudgeConfig": "cuda_agent.judge.config",
    "TimingConfig": "cuda_agent.judge.config",
    "JudgeUnavailable": "cuda_agent.judge.config",
    "COMPILE_MODES": "cuda_agent.judge.trusted.compile_modes",
    "CompileModeError": "cuda_agent.judge.trusted.compile_modes",
    "check_compile_mode": "cuda_agent.judge.trusted.compile_modes",
    "BuildConfig": "cuda_agent.judge.trusted.build",
    "MODULE_NAME": "cuda_agent.judge.trusted.build",
    "ToolchainError": "cuda_agent.judge.trusted.toolchain",
    "default_arch": "cuda_agent.judge.trusted.toolchain",
    "prepare_episode_cache": "cuda_agent.judge.trusted.cache",
    "shared_caches_from_env": "cuda_agent.judge.trusted.cache",
    "warm_shared": "cuda_agent.judge.trusted.cache",
    "Stat": "cuda_agent.judge.decide.verdict",
    "failure": "cuda_agent.judge.decide.verdict",
    "Stop": "cuda_agent.judge.decide.judgment",
    "default_workers": "cuda_agent.judge.decide.cpu_checks",
    "cache_root": "cuda_agent.judge.trusted.cache",
    "default_shared_root": "cuda_agent.judge.trusted.cache",
    "episode_caches": "cuda_agent.judge.trusted.cache",
}

__all__ = [
    "COMPILE_MODES",
    "MODULE_NAME",
    "SPEEDUP_THRESHOLD",
    "BuildConfig",
    "CompileModeError",
    "Environment",
    "JudgeConfig",
    "JudgeService",
    "JudgeUnavailable",
    "Judgment",
    "Stat",
    "Status",
    "Stop",
    "Timing",
    "TimingConfig",
    "ToolchainError",
    "Verdict",
    "cache_root",
    "check_compile_mode",
    "check_on_cpu",
    "default_arch",
    "default_shared_root",
    "default_workers",
    "episode_caches",
    "failure",
    "judge",
    "milestone_reward",
    "prepare_episode_cache",
    "shared_caches_from_env",
    "warm_shared",
]

if TYPE_CHECKING:  # for type checkers and editors; at run time `__getattr__` imports on first use
    from cuda_agent.judge.config import JudgeConfig, JudgeUnavailable, TimingConfig
    from cuda_agent.judge.decide.cpu_checks import check_on_cpu, default_workers
    from cuda_agent.judge.decide.entry import judge
    from cuda_agent.judge.decide.judgment import Judgment, Stop
    from cuda_agent.judge.decide.reward import SPEEDUP_THRESHOLD, milestone_reward
    from cuda_agent.judge.decide.service import JudgeService
    from cuda_agent.judge.decide.verdict import Environment, Stat, Status, Timing, Verdict, failure
    from cuda_agent.judge.trusted.build import MODULE_NAME, BuildConfig
    from cuda_agent.judge.trusted.cache import (
        cache_root,
        default_shared_root,
        episode_caches,
        prepare_episode_cache,
        shared_caches_from_env,
        warm_shared,
    )
    from cuda_agent.judge.trusted.compile_modes import COMPILE_MODES, CompileModeError, check_compile_mode
    from cuda_agent.judge.trusted.toolchain import ToolchainError, default_arch


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cuda_agent.judge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
