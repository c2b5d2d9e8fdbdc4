"""Helpers for the training tests (imported by name: pytest puts this folder on sys.path).

The records come from a real episode (the agent loop, its tools and trajectory writer, driven by the
scripted model over HTTP, the one double); variants of that record stand for episodes the judge scored
differently, since a CPU machine cannot judge.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agent"))

from scripted_llm import Reply, ScriptedLLM, call

from cuda_agent.agent import AgentConfig, ModelConfig, load_trajectory, run_episode
from cuda_agent.agent.judging import no_judge
from cuda_agent.agent.tools.sandbox import SandboxPolicy
from cuda_agent.task import load_task

RELU_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1024)]


def get_init_inputs():
    return []
"""

KERNEL = """#include <cuda_runtime.h>
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
"""
MODEL_NEW = "import torch\nimport cuda_extension\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return cuda_extension.relu_forward(x)\n"


def script(kernel: str) -> list:
    return [
        lambda r: Reply(content="Reading the reference.", tool_calls=[call("Read", None, file_path="model.py")]),
        lambda r: Reply(tool_calls=[call("Write", None, file_path="kernels/relu.cu", content=kernel),
                                    call("Write", None, file_path="model_new.py", content=MODEL_NEW)]),
        lambda r: Reply(content="Done: a ReLU kernel — écrit."),
    ]


def served_script(kernel: str) -> list:
    """The episode as a served tiny model plays it: tool-calling turns carry no text (transformers serve
    shows a turn with tool calls back to the model without its text), the last turn is text."""
    return [
        lambda r: Reply(tool_calls=[call("Read", None, file_path="model.py")]),
        lambda r: Reply(tool_calls=[call("Write", None, file_path="kernels/relu.cu", content=kernel),
                                    call("Write", None, file_path="model_new.py", content=MODEL_NEW)]),
        lambda r: Reply(content="Done: a ReLU kernel — écrit."),
    ]


def play(root: Path, kernel: str, steps: list | None = None, requests: list | None = None) -> dict:
    """One real episode (the agent loop and tools against the scripted server); `requests` receives the
    chat-completion requests the agent sent, as the server got them."""
    task = load_task(RELU_TASK, name="relu")
    with ScriptedLLM(steps or script(kernel)) as server:
        config = AgentConfig(model=ModelConfig(name="scripted", base_url=server.url, max_retries=0, max_tokens=512),
                             sandbox=SandboxPolicy(isolation="none"))
        run_episode(task, root / "ws", config, judge=no_judge, trajectory_path=root / "trajectory.jsonl")
        if requests is not None:
            requests.extend(server.requests)
    return load_trajectory(root / "trajectory.jsonl")


def judged(record: dict, reward: int | None, status: str = "ok", **fields) -> dict:
    out = copy.deepcopy(record)
    out["judge"] = {"status": status, "reward": reward, "reason": "", "verdict": None}
    out["reward"] = reward
    out.update(fields)
    return out


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path
