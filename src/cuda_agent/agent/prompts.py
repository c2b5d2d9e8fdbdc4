"""The two opening messages of an episode: the system prompt (the workspace's SKILL.md plus the rules of
this environment) and the task (the reference model to beat).

SKILL.md belongs to the workspace template, so the instructions the agent follows are the ones shipped
with the judge that will score it. What only the agent runner knows (where the workspace is mounted,
the sandbox, the budgets, how to finish) is appended here.
"""

from __future__ import annotations

from pathlib import Path

from cuda_agent.agent.config import AgentConfig

SKILL_FILE = "SKILL.md"

FALLBACK_SKILL = """\
# Writing CUDA kernels that beat torch.compile

Your workspace holds a PyTorch reference `model.py` (class Model, get_inputs, get_init_inputs). Write
`model_new.py` with a class ModelNew (same constructor and parameters as Model) whose forward only
allocates outputs and calls your CUDA kernels through the `cuda_extension` module.

- Kernels go in `kernels/`: `*.cu` files with the kernels and launchers, and `*_binding.cpp` files that
  register the Python entry points with REGISTER_BINDING (see binding_registry.h).
- `bash utils/compile.sh` builds kernels/ into cuda_extension.so.
- `python3 -m utils.verification` checks ModelNew against Model on random inputs.
- `python3 -m utils.profiling` times ModelNew against eager PyTorch and torch.compile.
- model.py, binding.cpp, binding_registry.h and utils/ are fixed; do not edit them.

Iterate: write, compile, verify, profile, improve, until your kernels are correct and more than 5%
faster than torch.compile.
"""


def system_prompt(workspace_root: Path, display_root: str, config: AgentConfig, protections: dict[str, str]) -> str:
    skill_path = workspace_root / SKILL_FILE
    skill = skill_path.read_text(encoding="utf-8") if skill_path.is_file() else FALLBACK_SKILL
    network = "no network access" if "isolated" in protections.get("network", "") else "network access"
    if protections.get("mechanism") == "bwrap":
        confinement = "The host's files are read-only there and /tmp is private."
    else:  # no mount namespace without bubblewrap: say so rather than promise a private /tmp
        confinement = "It does NOT confine files: /tmp is the host's, so keep your files in the workspace."
    budget = [f"at most {config.max_turns} turns", f"a context of {config.context_tokens} tokens"]
    if config.time_limit_s:
        budget.append(f"{_duration(config.time_limit_s)} of wall-clock time")
    return f"""{skill.rstrip()}

# Your environment

- The workspace is {display_root}; it is the current directory of every Bash command, and relative
  paths in all tools are relative to it. Only files inside it can be read or written with the tools.
- Bash commands run in a sandbox with {network}. {confinement} A command may run up to {_duration(config.bash_max_timeout_s)}
  (default {_duration(config.bash_timeout_s)}; set `timeout` in milliseconds); start longer jobs with
  run_in_background and poll them with BashOutput.
- Protected files (model.py, binding.cpp, binding_registry.h, SKILL.md, utils/) cannot be changed.
- You have {", ".join(budget)}.
  Keep tool output short: the context fills up.
- When your kernels are correct and as fast as you can make them, reply with a short summary and no tool
  call (or include {config.submit_marker} in your message). The final workspace is then judged: reward
  -1 if it fails, 1 if correct, 2 if more than 5% faster than eager PyTorch, 3 if also more than 5%
  faster than torch.compile.
"""


def task_prompt(task_name: str, task_source: str, display_root: str) -> str:
    return f"""Task `{task_name}`: make this PyTorch model faster with custom CUDA kernels.

The reference is {display_root}/model.py:

```python
{task_source.rstrip()}
```

Write your kernels in {display_root}/kernels/ and your ModelNew in {display_root}/model_new.py, then
compile, verify and profile them with the workspace's utils/ commands, and iterate until your version is
correct and faster than torch.compile.
"""


def _duration(seconds: float) -> str:
    seconds = float(seconds)
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"
