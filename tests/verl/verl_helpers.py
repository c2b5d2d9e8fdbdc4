"""What the verl tests share: the recipe's overrides composed with verl's own Hydra configs, a real judge
server whose executor returns a known verdict, and the one test double, a scripted token server.

Imported by name (`from verl_helpers import ...`): verl's wheel owns the top-level `tests` package.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "cuda_agent"
TOKEN = "verl-test-token-" + "y" * 24

TASK_SOURCE = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of a large vector: the reference the episode beats."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1 << 20, device="cuda")]


def get_init_inputs():
    return []
'''

MODEL_NEW = '''\
import torch
import torch.nn as nn
import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return cuda_extension.relu_forward(x)
'''

KERNEL = '''\
#include <torch/types.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

torch::Tensor relu_forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
'''

BINDING = '''\
#include <torch/extension.h>
#include "../binding_registry.h"

torch::Tensor relu_forward(torch::Tensor x);

REGISTER_BINDING(relu_forward, [](pybind11::module& m) { m.def("relu_forward", &relu_forward); });
'''


# -- the recipe, composed by verl -------------------------------------------------------------------

def recipe_lines(script: str, **env: str) -> list[str]:
    """The stage script's dry run: the module (or command), then one argument per line."""
    full = {**os.environ, "CUDA_AGENT_DRY_RUN": "1", "PYTHON": sys.executable, **env}
    done = subprocess.run(["bash", str(RECIPE / script)], env=full, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def verl_config_dir() -> str:
    spec = importlib.util.find_spec("verl")
    assert spec is not None and spec.submodule_search_locations
    return str(Path(next(iter(spec.submodule_search_locations))) / "trainer" / "config")


def compose(config_name: str, overrides: list[str]) -> Any:
    """verl's own Hydra config (`ppo_trainer`, `sft_trainer_engine`) with the overrides applied."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        return hydra_compose(config_name=config_name, overrides=overrides)


# -- a real judge server with a known verdict ---------------------------------------------------------

def ok_outcome(speedup_vs_eager: float = 3.1, speedup_vs_compile: float = 1.6) -> dict[str, Any]:
    """The outcome a GPU executor reports for a kernel faster than both baselines (reward 3): a real
    Verdict as the judge makes it, which RemoteJudge parses strictly."""
    from cuda_agent.judge.decide.verdict import Stat, Status, Timing, Verdict
    from cuda_agent.service.executors import outcome_of

    def stat(ms: float) -> Stat:
        return Stat(median=ms, p25=ms, p75=ms, min=ms, samples=30)

    eager, compiled = 0.25 * speedup_vs_eager, 0.25 * speedup_vs_compile
    timing = Timing(candidate_ms=0.25, eager_ms=eager, compile_ms=compiled, speedup_vs_eager=speedup_vs_eager,
                    speedup_vs_compile=speedup_vs_compile, speedup_vs_eager_low=speedup_vs_eager * 0.97,
                    speedup_vs_compile_low=speedup_vs_compile * 0.97, candidate=stat(0.25), eager=stat(eager),
                    compile=stat(compiled), rounds=30, baseline_source="measured", protocol="test")  # fmt: skip
    stages = {s: "passed" for s in ("task", "static", "build", "reference", "verify", "timing")}
    return outcome_of(Verdict(reward=3, status=Status.OK, reason="correct; faster than eager and torch.compile",
                              timing=timing, stages=stages))  # fmt: skip


def rejected_outcome(reason: str) -> dict[str, Any]:
    """What the judge reports for a submission its rules refuse (reward -1)."""
    from cuda_agent.judge.decide.verdict import Status, failure
    from cuda_agent.service.executors import outcome_of

    return outcome_of(failure(Status.REJECTED, reason))


@dataclass
class KnownVerdictExecutor:
    """A judge-server executor (service/executors.py's protocol) that answers every judgment with `outcome`
    and keeps the files it was sent; `hang=True` never answers (a judge that is alive but stuck)."""

    outcome: dict[str, Any] = field(default_factory=ok_outcome)
    hang: bool = False
    lanes: int = 1
    received: list[dict[str, str]] = field(default_factory=list)

    def start(self, report: Any, began: Any = None) -> None:
        self._report, self._began = report, began  # began(id): the judgment is running (service/jobs.py)

    def submit(self, job: Any) -> None:
        if self._began is not None and not self._began(job.id):
            return
        files = {p.relative_to(job.folder).as_posix(): p.read_text() for p in sorted(job.folder.rglob("*"))
                 if p.is_file() and (p.name == "model_new.py" or p.parent.name == "kernels")}  # fmt: skip
        self.received.append(files)
        if not self.hang:
            threading.Thread(target=self._report, args=(job.id, self.outcome), daemon=True).start()

    def busy(self) -> int:
        return 0

    def close(self) -> None:
        pass


@contextmanager
def judge_server(tmp: Path, executor: KnownVerdictExecutor) -> Iterator[str]:
    """`cuda-agent serve`'s app (FastAPI, SQLite store, job queue, bearer tokens) on 127.0.0.1."""
    import uvicorn

    from cuda_agent.service.app import create_app
    from cuda_agent.service.auth import Tokens
    from cuda_agent.service.jobs import JobQueue
    from cuda_agent.service.store import Store

    jobs = JobQueue(Store(tmp / "judgments.sqlite"), executor, tmp / "scratch")
    jobs.start()
    app = create_app(jobs, Tokens([TOKEN]))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the judge server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        jobs.close()
        sock.close()


def closed_port_url() -> str:
    """A localhost URL nothing listens on: a judge that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# -- the one test double: verl's server manager, scripted --------------------------------------------

class ScriptedServerManager:
    """Stands where verl's LLMServerClient stands (the rollout engine we cannot run here): `generate`
    takes token ids and returns the next scripted reply as token ids of the real tiny tokenizer."""

    def __init__(self, tokenizer: Any, replies: list[str]) -> None:
        self.tokenizer = tokenizer
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []
        self.sent: list[list[int]] = []

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kwargs: Any) -> Any:  # fmt: skip
        from verl.workers.rollout.replica import TokenOutput

        assert self.replies, "the agent asked for more turns than were scripted"
        ids = self.tokenizer.encode(self.replies.pop(0) + "<|im_end|>", add_special_tokens=False)
        self.calls.append({"request_id": request_id, "prompt_ids": list(prompt_ids),
                           "sampling_params": dict(sampling_params)})  # fmt: skip
        self.sent.append(ids)
        logprobs = [-0.01 * (i % 7 + 1) for i in range(len(ids))]
        return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed")


def tool_call(name: str, **arguments: Any) -> str:
    """A tool call as the tiny chat template writes it (Hermes: what verl's `hermes` parser reads)."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
