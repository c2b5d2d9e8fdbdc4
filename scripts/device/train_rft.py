"""The RFT loop, end to end on one GPU: collect -> judge -> rft-data -> sft -> serve -> solve -> reward.

Run by scripts/device/train_rft.sh (which installs carried wheels). Every stage is the real command a
user runs (`python3 -m cuda_agent.cli ...`, `transformers serve`); the only double is the scripted model
that plays the collection episodes, as in the agent's scripted-episode test.

1. Collect: a scripted policy plays 44 episodes on two ops (relu, abs) through `cuda-agent solve
   --no-judge` (the tools run for real: nvcc, verification on the GPU): careful kernels (reward >= 1),
   sloppy ones that do not compile and hasty ones that compute the wrong thing (reward -1), each reached
   through different conversations (what the model reads first, whether and how often it verifies,
   whether it retries). Each distinct final submission (6) is then judged once, for real, and its
   verdict goes to every episode that ended in it (`cuda_agent.train.verdicts.judge_distinct`).
2. `train rft-data` keeps the three successful plain relu episodes (the tiny model is to memorise one
   trajectory of one task: a model trained for seconds cannot learn to write kernels, only to reproduce
   one); `train tiny-model` builds the tokenizer and random weights; `train sft` overfits on purpose.
3. The fine-tuned model is served by `transformers serve` and drives `cuda-agent solve` on relu in the
   same workspace path (the prompt names it); the judge scores its episode. The same untrained model is
   the baseline.
4. `train value` pretrains a critic on all collected episodes (rewarded and failed), held out by episode,
   starting from the fine-tuned actor (as the paper's critic starts from the RFT actor), 8 episodes a
   step so every step sees both outcomes, and reports the held-out value loss and explained variance
   before, during and after; the critic is reloaded with AutoModelForTokenClassification.

Writes OUT/summary.json (every figure, `done_when`), OUT/summary.txt (the table printed at the end),
OUT/sft_loss.png, OUT/value_loss.png, the served episodes' trajectories, one log per stage, and the
critic's data for a CPU post-mortem: OUT/value.parquet and OUT/value_trajectories.tar.gz (every
collected trajectory with its final files; scripts/value_cpu_episodes.py says how to use them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "agent"))

from scripted_llm import Reply, ScriptedLLM, assistant_turns, call, last_tool_results  # noqa: E402

TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.{op}(x)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
"""

EXPRESSIONS = {"relu": "fmaxf(x[i], 0.0f)", "abs": "fabsf(x[i])"}
HEADERS = {
    "careful": "// y = {op}(x), one grid-stride loop over all elements",
    "sloppy": "// quick draft of {op}, not compiled yet",
    "hasty": "// placeholder for {op}: copies x for now",
}

KERNEL = """#include <cuda_runtime.h>
#include <cstdint>

{header}
__global__ void {op}_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {{
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {{
        y[i] = {expr}{semicolon}
    }}
}}

extern "C" void {op}_launch(const float* x, float* y, int64_t n, cudaStream_t stream) {{
    if (n <= 0) return;
    const int threads = {threads};
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 8192) blocks = 8192;
    {op}_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(x, y, n);
}}
"""

BINDING = """#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void {op}_launch(const float* x, float* y, int64_t n, cudaStream_t stream);

static torch::Tensor {op}_forward(torch::Tensor x) {{
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32,
                "x must be a contiguous float32 CUDA tensor");
    auto y = torch::empty_like(x);
    {op}_launch(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "{op} launch failed: ", cudaGetErrorString(err));
    return y;
}}

static void register_{op}(pybind11::module& m) {{ m.def("{op}_forward", &{op}_forward, py::arg("x")); }}
REGISTER_BINDING({op}, register_{op});
"""

MODEL_NEW = """import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.{op}_forward(x)
"""

COMPILE = "bash utils/compile.sh"
VERIFY = "python3 -m utils.verification"
OPS = ("relu", "abs")
THREADS = 256
# What the scripted model looks at before it writes (the same tools, different conversations).
PREAMBLES = {
    "none": [],
    "read": [[call("Read", None, file_path="model.py")]],
    "look": [[call("Glob", None, pattern="kernels/*")], [call("Read", None, file_path="model.py")]],
}
# How each behaviour ends after its first compile: careful kernels compile and pass, sloppy ones do not
# compile (a missing semicolon), hasty ones compile and compute the wrong thing (they copy x).
ENDINGS = {"careful": ("verify", "verify_twice", "no_verify"), "sloppy": ("give_up", "retry"),
           "hasty": ("verify", "no_verify")}  # fmt: skip
# The careful relu episode the tiny model memorises and is then served on ("relu"), played three times:
# the tool results differ from run to run (build times, cache hits), so the model learns its turns
# rather than one transcript's numbers.
SFT_TASKS = ("relu", "relu_a", "relu_b")


@dataclass(frozen=True)
class Episode:
    name: str
    op: str
    behaviour: str
    preamble: str
    ending: str


def episodes() -> list[Episode]:
    """The SFT episodes, then every (op, behaviour, preamble, ending): 21 conversations per op that end
    in 3 distinct submissions per op, so each final submission is judged once and its verdict reaches 6
    to 11 episodes. Names are neutral and numbered in a shuffled order (abs_07): the name is in the prompt
    and in every tool result's paths, so numbers given in behaviour order would tell a critic the outcome
    before the model has written anything (the first H200 run's names did: abs_23..31 were the careful ones)."""
    import random

    out = [Episode(name, "relu", "careful", "none", "verify") for name in SFT_TASKS]
    rest = [(op, behaviour, preamble, ending) for op in OPS for behaviour, endings in ENDINGS.items()
            for preamble in PREAMBLES for ending in endings
            if (op, behaviour, preamble, ending) != ("relu", "careful", "none", "verify")]  # fmt: skip
    numbers = list(range(len(out), len(out) + len(rest)))
    random.Random(13).shuffle(numbers)
    out += [Episode(f"{op}_{n:02d}", op, behaviour, preamble, ending)
            for n, (op, behaviour, preamble, ending) in zip(numbers, rest, strict=True)]  # fmt: skip
    return out


EPISODES = {e.name: e for e in episodes()}
BUDGET = ["--max-turns", "8", "--context-tokens", "32768", "--time-limit", "300"]  # same for every solve run


def kernel(op: str, behaviour: str, threads: int = THREADS) -> str:
    expr = "x[i]" if behaviour == "hasty" else EXPRESSIONS[op]
    return KERNEL.format(op=op, header=HEADERS[behaviour].format(op=op), expr=expr, threads=threads,
                         semicolon="" if behaviour == "sloppy" else ";")  # fmt: skip


def plan(episode: Episode) -> list[list[dict[str, Any]]]:
    """The episode's tool-calling turns, in order; its final text comes after them."""
    op = episode.op
    write = [call("Write", None, file_path=f"kernels/{op}.cu", content=kernel(op, episode.behaviour)),
             call("Write", None, file_path=f"kernels/{op}_binding.cpp", content=BINDING.format(op=op)),
             call("Write", None, file_path="model_new.py", content=MODEL_NEW.format(op=op))]  # fmt: skip
    compile_ = [call("Bash", None, command=COMPILE, timeout=600000)]
    verify = [call("Bash", None, command=VERIFY, timeout=600000)]
    turns = [*PREAMBLES[episode.preamble], write, compile_]
    turns += {"verify": [verify], "verify_twice": [verify, verify], "retry": [compile_]}.get(episode.ending, [])
    return turns


def final_text(episode: Episode, request: dict[str, Any]) -> str:
    results = "\n".join(last_tool_results(request))
    if episode.ending in ("give_up", "retry"):
        return "The build fails; I stop here." if episode.ending == "give_up" else "It still fails to build; giving up."
    if episode.ending == "no_verify":
        return "It compiles; done."
    return "The kernel compiles and passes verification." if "PASS" in results else "Done."


def policy(request: dict[str, Any]) -> Reply:
    """The scripted model: which episode is read from the task prompt, the step from the turn count.
    Tool-calling turns carry no text (transformers serve renders a turn with tool calls back without
    its text). `solve`'s one-token check of the server (max_tokens 1) is answered with one word."""
    if request.get("max_tokens") == 1:
        return Reply(content="ok")
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    episode = EPISODES[user.split("`", 2)[1]]
    turns = plan(episode)
    step = assistant_turns(request)
    if step < len(turns):
        return Reply(tool_calls=turns[step])
    return Reply(content=final_text(episode, request))


class Stages:
    """Runs commands, records each stage's wall time and keeps the logs under OUT."""

    def __init__(self, out: Path, env: dict[str, str]) -> None:
        self.out, self.env, self.times = out, env, {}
        self.summary: dict[str, Any] = {"stages_s": self.times}

    def run(self, stage: str, argv: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
        print(f"== {stage}: {' '.join(argv)}", flush=True)
        start = time.monotonic()
        with open(self.out / f"{stage}.log", "w") as log:
            try:
                done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=log, text=True, env=self.env,
                                      timeout=timeout, cwd=ROOT)  # fmt: skip
            except subprocess.TimeoutExpired as e:  # the stage is cut, the run goes on and says so
                out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
                done = subprocess.CompletedProcess(argv, 124, stdout=out)
                self.summary.setdefault("timed_out", []).append(stage)
        self.times[stage] = round(time.monotonic() - start, 1)
        tail = (self.out / f"{stage}.log").read_text()[-1500:]
        print(tail, flush=True)
        if done.returncode != 0:
            print(f"!! {stage} exited {done.returncode}", flush=True)
        return done

    def save(self) -> None:
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=2, default=str) + "\n")


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cuda_agent.cli", *args]


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seed_cache(work: Path, env: dict[str, str]) -> None:
    """Compile the workspace infrastructure and every kernel that compiles (careful and hasty, each op)
    once into work/seed, which episodes read and nobody writes afterwards (objects are cached by
    content, so the episodes' own builds hit it), and start the judge's cache (work/cache) from a copy."""
    from cuda_agent.task import load_task
    from cuda_agent.workspace import materialize

    workspaces = []
    for behaviour in ("careful", "hasty"):  # one op per workspace: the generated binding.cpp is per op set
        for op in OPS:
            ws = materialize(load_task(TASK.format(op=op), name="seed"), work / f"seed_{behaviour}_{op}", overwrite=True)
            (ws / "kernels" / f"{op}.cu").write_text(kernel(op, behaviour))
            (ws / "kernels" / f"{op}_binding.cpp").write_text(BINDING.format(op=op))
            (ws / "model_new.py").write_text(MODEL_NEW.format(op=op))  # compile.sh refuses the template's forward
            workspaces.append(ws)
    seed_env = {**env, "CUDA_AGENT_CACHE": str(work / "seed")}
    # the first build makes the precompiled header; the others (which reuse it) build at the same time
    builds = [[workspaces[0]], workspaces[1:]]
    for wave in builds:
        running = [(ws, subprocess.Popen(["bash", "utils/compile.sh"], cwd=ws, env=seed_env, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True)) for ws in wave]  # fmt: skip
        for ws, build in running:
            output, _ = build.communicate(timeout=600)
            if build.returncode != 0:
                raise SystemExit(f"seeding the build cache failed in {ws}:\n" + output[-4000:])
    shutil.copytree(work / "seed", work / "cache")


def serve_and_solve(stages: Stages, label: str, model: Path, work: Path, max_tokens: int) -> dict[str, Any]:
    """`transformers serve MODEL` on a free port, `cuda-agent solve` relu against it, the summary line."""
    port = free_port()
    log = open(stages.out / f"serve_{label}.log", "w")  # noqa: SIM115 (closed in the finally below)
    # transformers serve lists models by scanning the hub cache, and answers 500 when that folder is missing
    # (as on a machine that never downloaded a model): give it an empty one.
    hub_cache = work / "hf_hub"
    hub_cache.mkdir(exist_ok=True)
    server = subprocess.Popen([sys.executable, "-m", "transformers.cli.transformers", "serve", str(model),
                               "--host", "127.0.0.1", "--port", str(port), "--device", "cuda:0", "--dtype", "float32"],
                              stdout=log, stderr=subprocess.STDOUT,
                              env={**stages.env, "HF_HUB_CACHE": str(hub_cache)})  # fmt: skip
    start = time.monotonic()
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() - start > 120:
                    raise SystemExit(f"transformers serve did not start; see serve_{label}.log") from None
                time.sleep(0.5)
        stages.times[f"serve_start_{label}"] = round(time.monotonic() - start, 1)
        done = stages.run(f"solve_{label}", cli(
            "solve", str(work / "tasks" / "relu.py"), "--model", str(model), "--base-url", f"http://127.0.0.1:{port}/v1",
            "--temperature", "0", "--max-tokens", str(max_tokens), *BUDGET, "--config", str(work / "served.json"), "--runs-dir", str(work / "runs"), "--force",
            "--cache-seed", str(work / "seed"), "--json", "--out", str(stages.out / f"trajectory_{label}.jsonl"),
        ), timeout=240)  # fmt: skip
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    rows = json_lines(done.stdout)
    return rows[0] if rows else {"error": f"solve exited {done.returncode} without a summary"}


def memorised_turn(model: Path, data: Path) -> dict[str, Any]:
    """Greedy first turn of the fine-tuned model vs the trajectory it was trained on (before serving it)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cuda_agent.train.rft_data import read_rows

    row = read_rows(data)[0]
    tools = json.loads(row["tools"])
    tokenizer = AutoTokenizer.from_pretrained(model)
    lm = AutoModelForCausalLM.from_pretrained(model).to("cuda").eval()
    prompt = tokenizer.apply_chat_template(row["messages"][:2], tools=tools, add_generation_prompt=True,
                                           return_tensors="pt", return_dict=True)  # fmt: skip
    full = tokenizer.apply_chat_template(row["messages"][:3], tools=tools, return_dict=True)["input_ids"]
    target = full[prompt["input_ids"].shape[1]:]
    target = target[: target.index(tokenizer.eos_token_id) + 1]  # the turn ends at <|im_end|>, where generation stops
    with torch.no_grad():
        generated = lm.generate(**prompt.to("cuda"), max_new_tokens=len(target) + 16, do_sample=False)
    produced = generated[0, prompt["input_ids"].shape[1]:].tolist()
    same = next((i for i, (a, b) in enumerate(zip(produced, target, strict=False)) if a != b), min(len(produced), len(target)))
    return {"prompt_tokens": int(prompt["input_ids"].shape[1]), "turn_tokens": len(target), "matching_prefix": same,
            "exact": produced[: len(target)] == target}  # fmt: skip


def collect(stages: Stages, work: Path, concurrency: int) -> None:
    """Every scripted episode through `solve --no-judge` (its tools run for real: nvcc, the GPU
    verification), then each distinct final submission judged once for real (`judge_distinct`)."""
    from cuda_agent.agent.judging import LocalJudge
    from cuda_agent.train.verdicts import judge_distinct

    summary = stages.summary
    with ScriptedLLM(policy) as scripted:
        done = stages.run("collect", cli("solve", str(work / "tasks"), "--model", "scripted", "--base-url", scripted.url,
                                         "--max-tokens", "4096", *BUDGET, "--runs-dir", str(work / "runs"), "-j",
                                         str(concurrency), "--cache-seed", str(work / "seed"), "--no-judge", "--json"),
                          timeout=300)  # fmt: skip
    episodes_out = {r["task"]: r for r in json_lines(done.stdout)}
    start = time.monotonic()
    report = judge_distinct([work / "runs"], LocalJudge(), progress=lambda line: print(line, flush=True))
    stages.times["judge_distinct"] = round(time.monotonic() - start, 1)
    print(report.table(), flush=True)
    summary["judgments"] = report.to_dict()
    from cuda_agent.agent import load_trajectory

    collected = {}
    for name, row in sorted(episodes_out.items()):
        record = load_trajectory(row["trajectory"])
        episode = EPISODES[name]
        collected[name] = {"behaviour": episode.behaviour, "preamble": episode.preamble, "ending": episode.ending,
                           "exit": row.get("exit"), "turns": row.get("turns"), "reward": record.get("reward"),
                           "judge": (record.get("judge") or {}).get("status")}  # fmt: skip
    summary["collected"] = collected
    rewards = [c["reward"] for c in collected.values()]
    summary["collected_counts"] = {"episodes": len(collected), "rewarded": sum(1 for r in rewards if (r or -1) >= 1),
                                   "failed": sum(1 for r in rewards if r is not None and r < 1),
                                   "unjudged": sum(1 for r in rewards if r is None)}  # fmt: skip


PACK_LIMIT = 8 * 2**20


def pack_value_data(work: Path, out: Path, summary: dict[str, Any]) -> None:
    """Copy the critic's data into OUT so a failure can be studied on a CPU: value.parquet as written,
    and every collected episode's trajectory with its final files (model_new.py, kernels/: what the
    judge saw) as OUT/value_trajectories.tar.gz (`tar xzf` gives runs/<task>/...; `cuda-agent train
    rft-data runs ...` reads it again). Build folders and caches stay behind; past 8 MB in all the
    archive is dropped and the summary says so."""
    import tarfile

    parquet = work / "value.parquet"
    if parquet.is_file():
        shutil.copy(parquet, out / "value.parquet")
    archive = out / "value_trajectories.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for run in sorted((work / "collected").iterdir()):
            trajectory = run / "trajectory.jsonl"
            if not trajectory.is_file():
                continue
            tar.add(trajectory, arcname=f"runs/{run.name}/trajectory.jsonl")
            workspace = run / "workspace"
            for path in [workspace / "model_new.py", *sorted((workspace / "kernels").glob("*"))]:
                if path.is_file() and path.stat().st_size < 2**20:
                    tar.add(path, arcname=f"runs/{run.name}/workspace/{path.relative_to(workspace)}")
    sizes = {p.name: p.stat().st_size for p in (out / "value.parquet", archive) if p.is_file()}
    if sum(sizes.values()) > PACK_LIMIT:
        archive.unlink()
        sizes["dropped"] = f"over {PACK_LIMIT} bytes"
    summary["value_data_packed"] = sizes


def summary_table(summary: dict[str, Any]) -> str:
    """The Done-when figures, one line each."""
    value = summary.get("value") or {}
    before, after = value.get("heldout_before") or {}, value.get("heldout_after") or {}
    sft = summary.get("sft") or {}
    counts = summary.get("collected_counts") or {}
    judgments = summary.get("judgments") or {}
    fine, base = summary.get("finetuned_episode") or {}, summary.get("baseline_episode") or {}

    def f(x: Any, spec: str = ".4g") -> str:
        return format(x, spec) if isinstance(x, (int, float)) else str(x)

    rows = [
        ("collected episodes", f"{counts.get('episodes')} ({counts.get('rewarded')} rewarded, {counts.get('failed')} "
                               f"failed, {counts.get('unjudged')} unjudged); {judgments.get('judgments')} real judgments"),
        ("SFT loss", f"{f(sft.get('first_loss'))} -> {f(sft.get('last_loss'))} in {sft.get('steps')} steps, "
                     f"{f(sft.get('wall_s'), '.0f')} s"),
        ("memorised first turn", str(summary.get("memorised_first_turn", {}).get("exact"))),
        ("fine-tuned episode", f"reward {fine.get('reward')} ({(fine.get('judge') or {}).get('status')}), exit "
                               f"{fine.get('exit')}, {fine.get('turns')} turns"),
        ("untrained episode", f"reward {base.get('reward')} ({(base.get('judge') or {}).get('status')}), exit "
                              f"{base.get('exit')}, {base.get('turns')} turns"),
        ("value episodes", f"{value.get('train_episodes')} train / {value.get('heldout_episodes')} held out; critic "
                           f"from {summary.get('value_init')}"),
        ("value train loss", f"{f(value.get('first_loss'))} -> {f(value.get('last_loss'))} in {value.get('steps')} steps"),
        ("held-out value loss", f"{f(before.get('value_loss'))} -> {f(after.get('value_loss'))}"),
        ("held-out explained variance", f"{f(before.get('explained_variance'), '.3f')} -> "
                                        f"{f(after.get('explained_variance'), '.3f')}"),
        ("critic reloads (num_labels)", str(value.get("reloaded_num_labels"))),
        ("wall time", f"{f(summary.get('wall_s'), '.0f')} s"),
    ]  # fmt: skip
    rows += [(f"done: {k}", "yes" if v else "NO") for k, v in (summary.get("done_when") or {}).items()]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/train_rft"))
    parser.add_argument("--sft-steps", type=int, default=600)
    parser.add_argument("--value-epochs", type=float, default=40)
    parser.add_argument("--value-lr", type=float, default=5e-4)
    parser.add_argument("--value-batch", type=int, default=8, help="episodes per critic step (both outcomes mixed)")
    parser.add_argument("--value-warmup", type=int, default=10)
    parser.add_argument("--value-init", choices=["sft", "tiny"], default="sft",
                        help="critic's starting weights: the fine-tuned actor (default) or the untrained tiny model")
    parser.add_argument("-j", "--concurrency", type=int, default=16, help="collection episodes at once")
    args = parser.parse_args()
    out, work = args.out.resolve(), args.work.resolve()
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    (work / "tasks").mkdir(parents=True)
    env = {**os.environ, "CUDA_AGENT_CACHE": str(work / "cache"), "HF_HUB_OFFLINE": "1", "PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    os.environ.update({k: env[k] for k in ("CUDA_AGENT_CACHE", "HF_HUB_OFFLINE")})
    stages = Stages(out, env)
    summary = stages.summary
    start = time.monotonic()
    import torch
    import transformers

    summary["environment"] = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                              "transformers": transformers.__version__}  # fmt: skip
    # A broken reply from a served model is answered once more, not six times with backoff.
    (work / "served.json").write_text(json.dumps({"model": {"max_retries": 1}}))
    for name, episode in EPISODES.items():
        (work / "tasks" / f"{name}.py").write_text(TASK.format(op=episode.op))

    # 1. collect, each distinct final submission judged once for real
    t = time.monotonic()
    seed_cache(work, env)
    stages.times["seed_cache"] = round(time.monotonic() - t, 1)
    collect(stages, work, args.concurrency)
    shutil.copytree(work / "runs", work / "collected", symlinks=True)  # runs/relu is reused by the served episodes
    stages.save()

    # 2. data, tiny model, sft
    done = stages.run("rft_data", cli("train", "rft-data", str(work / "collected"), "--out", str(work / "sft.parquet"),
                                      "--min-reward", "1", *(f"--task={t}" for t in SFT_TASKS), "--json"))  # fmt: skip
    summary["rft_data"] = (json_lines(done.stdout) or [{}])[0]
    done = stages.run("tiny_model", cli("train", "tiny-model", "--out", str(work / "tiny"), "--corpus",
                                        str(work / "collected"), "--json"))  # fmt: skip
    summary["tiny_model"] = (json_lines(done.stdout) or [{}])[0]
    done = stages.run("sft", cli("train", "sft", "--data", str(work / "sft.parquet"), "--model", str(work / "tiny"),
                                 "--out", str(work / "sft"), "--max-steps", str(args.sft_steps), "--lr", "1e-3",
                                 "--warmup-steps", "10", "--max-length", "32768", "--no-gradient-checkpointing",
                                 "--logging-steps", "5", "--json"))  # fmt: skip
    sft = (json_lines(done.stdout) or [{}])[0]
    summary["sft"] = {k: v for k, v in sft.items() if k != "loss_curve"}
    summary["sft_loss_curve"] = sft.get("loss_curve")
    if (work / "sft" / "sft_loss.png").is_file():
        shutil.copy(work / "sft" / "sft_loss.png", out / "sft_loss.png")
    stages.save()
    if done.returncode == 0:
        summary["memorised_first_turn"] = memorised_turn(work / "sft", work / "sft.parquet")
        max_tokens = summary["memorised_first_turn"]["turn_tokens"] + 256
        stages.save()
        # 3. serve the fine-tuned model, then the untrained one, each driving solve on relu
        summary["finetuned_episode"] = serve_and_solve(stages, "finetuned", work / "sft", work, max_tokens)
        stages.save()
        summary["baseline_episode"] = serve_and_solve(stages, "untrained", work / "tiny", work, max_tokens)
        stages.save()

    # 4. value pretraining on rewarded and failed episodes (each episode once: --keep-duplicates)
    done = stages.run("value_data", cli("train", "rft-data", str(work / "collected"), "--out",
                                        str(work / "value.parquet"), "--min-reward", "-1", "--any-exit",
                                        "--keep-duplicates", "--json"))  # fmt: skip
    summary["value_data"] = (json_lines(done.stdout) or [{}])[0]
    pack_value_data(work, out, summary)
    # The critic starts from the actor (the paper pretrains it on the RFT actor's trajectories; verl's
    # critic is initialised from the actor too); the untrained tiny model only when SFT did not finish.
    critic_init = work / "sft" if args.value_init == "sft" and (work / "sft" / "config.json").is_file() else work / "tiny"
    summary["value_init"] = critic_init.name
    done = stages.run("value", cli("train", "value", "--data", str(work / "value.parquet"), "--model",
                                   str(critic_init), "--out", str(work / "critic"), "--epochs", str(args.value_epochs),
                                   "--lr", str(args.value_lr), "--batch-size", str(args.value_batch),
                                   "--warmup-steps", str(args.value_warmup), "--eval-fraction", "0.25",
                                   "--eval-every", "10", "--max-length", "32768", "--logging-steps", "1", "--json"),
                      timeout=150)  # bounded: the whole run must stay within 9 minutes  # fmt: skip
    value = (json_lines(done.stdout) or [{}])[0]
    summary["value"] = {k: v for k, v in value.items() if k != "loss_curve"}
    summary["value_loss_curve"] = value.get("loss_curve")
    if (work / "critic" / "value_loss.png").is_file():
        shutil.copy(work / "critic" / "value_loss.png", out / "value_loss.png")
        from transformers import AutoModelForTokenClassification

        critic = AutoModelForTokenClassification.from_pretrained(work / "critic")
        summary["value"]["reloaded_num_labels"] = critic.config.num_labels
        summary["value"]["reloaded_class"] = type(critic).__name__

    summary["wall_s"] = round(time.monotonic() - start, 1)
    finetuned, baseline = summary.get("finetuned_episode") or {}, summary.get("baseline_episode") or {}
    after = summary["value"].get("heldout_after") or {}
    before = summary["value"].get("heldout_before") or {}
    summary["done_when"] = {
        "finetuned_reward_ge_1": (finetuned.get("reward") or -1) >= 1,
        "untrained_fails": bool(baseline) and (baseline.get("reward") or -1) < 1,
        "value_train_loss_falls": (summary["value"].get("last_loss") or 1e9) < (summary["value"].get("first_loss") or 0),
        "heldout_value_loss_falls": (after.get("value_loss") or 1e9) < (before.get("value_loss") or 0),
        "explained_variance_gt_0.5": (after.get("explained_variance") or 0) > 0.5,
        "critic_reloads": summary["value"].get("reloaded_num_labels") == 1,
    }
    stages.save()
    print(json.dumps({k: summary[k] for k in ("done_when", "stages_s", "wall_s")}, indent=2))
    table = summary_table(summary)
    (out / "summary.txt").write_text(table + "\n")
    print(table, flush=True)
    return 0 if all(summary["done_when"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
