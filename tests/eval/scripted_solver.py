"""A scripted "model" that solves the bundled KernelBench-layout tasks: the eval tests' only double.

It runs behind tests/agent's real OpenAI-compatible HTTP server (`ScriptedLLM`). On its first turn it
reads the task's name from the task prompt (Task `level1_19_ReLU`: ...), and writes that task's files with
the Write tool: by default the reference solution under examples/kernelbench_mini/solutions/levelN/<stem>/
(model_new.py and kernels/), or what `files_for(task_name)` returns. Then, when `compile` is set, it runs
the workspace's `bash utils/compile.sh` like an agent checking its work, with `verify` then
`python3 -m utils.verification` (real GPU work in a tool: what the GPU lease keeps away from other
episodes' judgments), and finally answers without a tool call, which ends the episode. Every reply
depends only on the conversation, so a resumed episode gets the same replies.

Run as a script it serves until killed (the GPU script's model):
    python tests/eval/scripted_solver.py --port-file PORT [--compile] [--verify] [--delay 0.2]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "agent"))

from scripted_llm import Reply, ScriptedLLM, assistant_turns, call  # noqa: E402 (ScriptedLLM: re-exported)

MINI = ROOT / "examples" / "kernelbench_mini"
SOLUTIONS = MINI / "solutions"
_TASK = re.compile(r"Task `(level(\d+)_(\d+)_[^`]+)`")

FilesFor = Callable[[str], dict[str, str]]


def solution_files(task_name: str, solutions: Path = SOLUTIONS) -> dict[str, str]:
    """The reference solution of a mini task (`level1_19_ReLU` -> solutions/level1/19_ReLU/)."""
    match = re.fullmatch(r"level(\d+)_(\d+)_(.+)", task_name)
    if not match:
        return {}
    folder = solutions / f"level{match.group(1)}" / f"{match.group(2)}_{match.group(3)}"
    if not folder.is_dir():
        return {}
    files = {"model_new.py": (folder / "model_new.py").read_text()}
    for path in sorted((folder / "kernels").iterdir()):
        files[f"kernels/{path.name}"] = path.read_text()
    return files


def task_name_of(request: dict) -> str | None:
    for message in request["messages"]:
        if message["role"] == "user" and isinstance(message.get("content"), str):
            match = _TASK.search(message["content"])
            if match:
                return match.group(1)
    return None


def solver(files_for: FilesFor = solution_files, compile: bool = False, verify: bool = False) -> Callable[[dict], Reply]:
    """The script: write the files, (compile,) (verify: real GPU work in a tool,) finish."""

    def script(request: dict) -> Reply:
        turn = assistant_turns(request)
        name = task_name_of(request)
        if name is None:  # the client's one-token server check, not an episode
            return Reply(content="ok")
        if turn == 0:
            files = files_for(name)
            if not files:
                return Reply(content=f"I have no solution for {name}.")
            return Reply(tool_calls=[call("Write", None, file_path=p, content=c) for p, c in files.items()])
        steps = (["bash utils/compile.sh"] if compile else []) + (["python3 -m utils.verification"] if verify else [])
        if 1 <= turn <= len(steps):
            return Reply(tool_calls=[call("Bash", None, command=steps[turn - 1], timeout=600000)])
        return Reply(content="The kernels are written; done.")

    return script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--compile", action="store_true", help="run utils/compile.sh before finishing")
    parser.add_argument("--verify", action="store_true", help="then run python3 -m utils.verification (GPU work)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per agent turn")
    args = parser.parse_args()
    with ScriptedLLM(solver(compile=args.compile, verify=args.verify), models=["scripted-solver"], delay_s=args.delay) as server:
        args.port_file.write_text(json.dumps({"url": server.url}))
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
