"""The judge over HTTP against the judge in-process, in one run: throughput, latency, same verdicts.

    python benchmarks/judge_service.py [--n 60] [--clients 8] [--honest 3] [--aa-example row_softmax]
                                       [--aa-reps 3] [--deadline-s S] [--phase all|local|service]
                                       [--build-only] [--out DIR]

Submissions: the bundled examples (examples/*, minus build_hang and infinite_loop, which take a minute by
design) and `--honest` honest adversarial cases (tests/adversarial/*honest*) that share one task, so few
tasks need baselines. Judgment i judges base i mod len(bases) as a *variant*: a copy whose first .cu ends
with a unique comment, so every judgment really compiles that file (and only that file: the other
sources were built by the priming pass), as when an agent edits a kernel. Stages, in one process:

  1. prime: one judgment per task (the task's baselines measured once, into the judge's cache, which the
     server shares) while every other base and the idle A/A variants are built on the CPU;
  2. idle A/A: `--aa-reps` variants of `--aa-example`, one at a time on a quiet host;
  3. local: a fresh `JudgeService.judge_many` over `--n` variants (builds in parallel, GPU stages serial);
  4. service: `cuda-agent serve` (a subprocess on 127.0.0.1, fresh like the local service) and `--clients`
     concurrent HTTP clients (threads: submit, then long-poll wait) over another `--n` variants.

Both runs start warm (baselines and objects cached by the priming pass, their clocks from a started
service) and judge the same bases in the same order; the figures say whether each really was warm (every
timed verdict with cached baselines) and built exactly its changed file. Prints verdicts/hour of both and
the ratio (service / local), p50/p99 submit-to-verdict latency, per-submission status/reward agreement,
every honest case ok, the A/A ratio (the A/A example's candidate time inside the loaded service run over
its idle time) and the server's /metrics against the verdicts. Writes judge_service.json (every figure and
a `done_when` map, rewritten after each stage, so a run stopped by its deadline or a kill still leaves
what it measured) and verdicts.jsonl to `--out`; exit 0 only if every Done-when item is met.

`--deadline-s`: a stage that cannot finish in the time left is not started, and a run stops taking
submissions at the deadline (its JSON then says what was not reached). `--phase local` stops after stage
3 and keeps its results in `--state` (default `--out`); `--phase service` (same `--state`, same machine
and judge cache) runs stage 4 against them: the whole comparison in two device commands when one is too
short (the JSON gives the time between them).
`--build-only` runs the same comparison on the CPU checks (no GPU; no A/A, no rewards beyond -1/0).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from cuda_agent.service.launch import ServerProcess, ServerStartError  # noqa: E402 - after the path

TARGET_THROUGHPUT = 0.90
TARGET_AA = 0.02
MIN_JUDGMENTS = 60
MIN_CLIENTS = 8
SLOW_BY_DESIGN = frozenset({"build_hang", "infinite_loop"})
STATE_FILE = "local_state.json"


# ---- submissions ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Base:
    name: str
    folder: Path
    expected: str | None  # the status it should get ("ok" for every honest case)
    task: str  # sha256 of its model.py: baselines are cached per task
    honest: bool


def _task_digest(folder: Path) -> str:
    return hashlib.sha256((folder / "model.py").read_bytes()).hexdigest()


def bundled_examples() -> list[Base]:
    found = []
    for folder in sorted((REPO / "examples").iterdir()):
        if (folder / "expected.json").is_file() and folder.name not in SLOW_BY_DESIGN:
            status = json.loads((folder / "expected.json").read_text()).get("status")
            found.append(Base(folder.name, folder, status, _task_digest(folder), status == "ok"))
    return found


def honest_cases(count: int) -> list[Base]:
    """The first `count` honest adversarial cases of the task most of them share (one set of baselines)."""
    groups: dict[str, list[Path]] = {}
    for folder in sorted((REPO / "tests" / "adversarial").glob("*honest*")):
        if (folder / "model_new.py").is_file() and (folder / "model.py").is_file():
            groups.setdefault(_task_digest(folder), []).append(folder)
    if count <= 0 or not groups:
        return []
    digest, folders = min(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0].name))
    return [Base(f.name, f, "ok", digest, True) for f in folders[:count]]


def choose_bases(honest: int, only: list[str] | None = None) -> list[Base]:
    """The bases judged: the bundled examples and `honest` honest cases, or just those in `only` (names of
    bundled examples or honest cases, or folders holding a model.py)."""
    if not only:
        return bundled_examples() + honest_cases(honest)
    known = {b.name: b for b in bundled_examples() + honest_cases(1000)}
    chosen, missing = [], []
    for entry in only:
        folder = Path(entry)
        if entry in known:
            chosen.append(known[entry])
        elif folder.is_dir() and (folder / "model.py").is_file():
            expected = folder / "expected.json"
            status = json.loads(expected.read_text()).get("status") if expected.is_file() else None
            chosen.append(Base(folder.name, folder.resolve(), status, _task_digest(folder), status == "ok"))
        else:
            missing.append(entry)
    if missing:
        raise SystemExit(
            f"error: unknown base(s) {', '.join(missing)}: give a folder with a model.py or one of "
            f"{', '.join(sorted(known))}"
        )
    return chosen


def first_cu(folder: Path) -> Path | None:
    cus = sorted((folder / "kernels").glob("*.cu")) if (folder / "kernels").is_dir() else []
    return cus[0] if cus else None


RUN_NONCE = secrets.token_hex(6)  # in every variant: the object cache outlives a run, and an earlier run's
# variant of the same index would otherwise be found there instead of compiled


def variant(base: Base, into: Path, tag: str) -> Path:
    """A copy of `base` whose first .cu ends with a comment unique to this run and judgment (so it is
    compiled, and nothing else of it is: the same behaviour, one recompile)."""
    shutil.copytree(
        base.folder, into, ignore=shutil.ignore_patterns("__pycache__", "expected.json", "README.md")
    )
    cu = first_cu(into)
    if cu is not None:
        with cu.open("a") as handle:
            handle.write(f"\n// variant {tag} of run {RUN_NONCE}\n")
    return into


def plan(bases: list[Base], n: int) -> list[Base]:
    """Judgment i judges bases[i mod len(bases)]: every base about equally often, the same order each run."""
    return [bases[i % len(bases)] for i in range(n)]


# ---- progress and time ---------------------------------------------------------------------------------
class Clock:
    def __init__(self, deadline_s: float | None) -> None:
        self.started = time.monotonic()
        self.deadline = self.started + deadline_s if deadline_s else None

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def log(self, message: str) -> None:
        print(f"[{self.elapsed():6.1f} s] {message}", file=sys.stderr, flush=True)


def describe(record: dict[str, Any]) -> str:
    timing = (record.get("verdict") or {}).get("timing") or {}
    extra = (
        f", candidate {timing['candidate_ms']:.4g} ms ({timing.get('baseline_source')} baselines)"
        if timing
        else ""
    )
    return f"{record['status']} (reward {record.get('reward')}){extra}"


def outcome(verdict: Any) -> dict[str, Any]:
    """A local verdict in the shape the server returns one (status, reward, reason, verdict JSON)."""
    return {"status": verdict.status.value, "reward": verdict.reward, "reason": verdict.reason,
            "verdict": json.loads(verdict.to_json())}  # fmt: skip


class Tally:
    """Progress lines of one run: k/n, the base, its verdict, the rate so far and the time to go."""

    def __init__(self, clock: Clock, what: str, items: list[tuple[Base, Path]]) -> None:
        self.clock, self.what, self.items = clock, what, items
        self.began = time.monotonic()
        self.done = 0

    def __call__(self, index: int, record: dict[str, Any]) -> None:
        self.done += 1
        spent = time.monotonic() - self.began
        eta = spent / self.done * (len(self.items) - self.done)
        self.clock.log(f"{self.what} {self.done}/{len(self.items)} {self.items[index][0].name}: {describe(record)}"
                       f"  [{spent / self.done:.1f} s/verdict, ~{eta:.0f} s to go]")  # fmt: skip


# ---- the stages ----------------------------------------------------------------------------------------
def _pin(cpus: frozenset[int] | None) -> None:
    if cpus:
        os.sched_setaffinity(0, cpus)  # this thread, and the compilers it starts


def cpu_check(folder: Path, config: Any) -> dict[str, Any]:
    from cuda_agent.judge import check_on_cpu

    return outcome(check_on_cpu(folder, None, config)[0])


def prime(bases: list[Base], aa: Base | None, aa_reps: int, root: Path, config: Any, build_only: bool,
          workers: int, clock: Clock) -> dict[str, Any]:  # fmt: skip
    """Stages 1-2: each task's baselines measured once (the first base of the task expected ok, judged on
    the GPU), every other base and the A/A variants built meanwhile on the CPU (their unchanged sources
    into the object cache); then the idle A/A judgments, one at a time on a quiet host."""
    began = time.monotonic()
    leaders: dict[str, Base] = {}
    for base in sorted(bases, key=lambda b: b.expected != "ok"):
        leaders.setdefault(base.task, base)
    aa_items = (
        [variant(aa, root / f"aa-{k}", f"aa-{k}") for k in range(aa_reps)] if aa and not build_only else []
    )
    cpu_only = [b.folder for b in bases if build_only or b not in leaders.values()] + aa_items
    tasks: dict[str, dict[str, Any]] = {}
    clock.log(
        f"prime: {len(leaders)} task(s) judged for their baselines, {len(cpu_only)} folder(s) built on the CPU"
    )
    if build_only:
        with ThreadPoolExecutor(max(1, workers)) as cpu:
            records = list(cpu.map(lambda folder: cpu_check(folder, config), cpu_only))
        return {"seconds": round(time.monotonic() - began, 2), "tasks": {}, "aa_idle_ms": [],
                "built": dict(Counter(r["status"] for r in records))}  # fmt: skip
    from cuda_agent.judge import JudgeService

    aa_idle: list[float] = []
    with contextlib.ExitStack() as stack:
        service = stack.enter_context(JudgeService(config, keep_warm=True))  # no GPU: stops here
        # On the compiler cores, as the service's own builds: never on the cores of its GPU lane's workers.
        cpu = stack.enter_context(
            ThreadPoolExecutor(max(1, workers), initializer=_pin, initargs=(service.build_cpus,))
        )
        builds = [cpu.submit(cpu_check, folder, config) for folder in cpu_only]
        leader_list = list(leaders.values())
        for index, verdict in service.judge_many([b.folder for b in leader_list]):
            record = outcome(verdict)
            timing = record["verdict"].get("timing") or {}
            tasks[leader_list[index].task[:12]] = {
                "judged": leader_list[index].name, "status": record["status"],
                "baselines": timing.get("baseline_source"), "seconds": record["verdict"]["stage_seconds"].get("total"),
            }  # fmt: skip
            clock.log(f"prime {len(tasks)}/{len(leader_list)} {leader_list[index].name}: {describe(record)}")
        built = [b.result() for b in builds]  # the A/A judgments below are at rest: nothing else runs
        for k, folder in enumerate(aa_items):
            record = outcome(service.judge(folder))
            clock.log(f"idle A/A {k + 1}/{len(aa_items)} {aa.name if aa else ''}: {describe(record)}")
            timing = (record["verdict"] or {}).get("timing")
            if timing:
                aa_idle.append(timing["candidate_ms"])
    return {"seconds": round(time.monotonic() - began, 2), "tasks": tasks, "aa_idle_ms": aa_idle,
            "built": dict(Counter(r["status"] for r in built))}  # fmt: skip


def judge_locally(items: list[tuple[Base, Path]], config: Any, build_only: bool, workers: int, clock: Clock
                  ) -> tuple[dict[int, dict], float]:  # fmt: skip
    """Stage 3: the in-process judge over `items`, timed from a started service to its last verdict."""
    records: dict[int, dict] = {}
    tally = Tally(clock, "local", items)
    if build_only:
        start = time.monotonic()
        with ThreadPoolExecutor(max(1, workers)) as pool:
            futures = {pool.submit(cpu_check, folder, config): i for i, (_, folder) in enumerate(items)}
            for future, index in futures.items():
                if clock.left() <= 0:
                    pool.shutdown(wait=False, cancel_futures=True)
                    break
                records[index] = future.result()
                tally(index, records[index])
        return records, time.monotonic() - start
    from cuda_agent.judge import JudgeService

    with JudgeService(config, keep_warm=True) as service:
        start = time.monotonic()
        for index, verdict in service.judge_many([folder for _, folder in items]):
            records[index] = outcome(verdict)
            tally(index, records[index])
            if clock.left() <= 0:
                clock.log("local: deadline reached; the rest is not judged")
                break
        seconds = time.monotonic() - start
    return records, seconds


class Server(ServerProcess):
    """`cuda-agent serve` in a subprocess on 127.0.0.1 with a fresh token, sharing this process's caches."""

    def __init__(self, root: Path, build_only: bool, workers: int, n: int, clock: Clock) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.token = secrets.token_urlsafe(32)
        (root / "tokens").write_text(self.token + "\n")
        args = ["--token-file", str(root / "tokens"), "--data-dir", str(root / "data"),
                "--max-pending", str(max(64, 2 * n))]  # fmt: skip
        if build_only:
            args += ["--build-only", "--workers", str(workers)]
        pythonpath = os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])
        try:
            super().__init__(root, args, env={"PYTHONPATH": pythonpath}, timeout_s=min(180.0, max(5.0, clock.left())))
        except ServerStartError as exc:
            raise RuntimeError(f"the server did not start: {exc}") from None

    def metrics(self) -> dict[str, float]:
        import httpx

        text = httpx.get(
            self.url + "/metrics", headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        ).text
        return parse_metrics(text)


def parse_metrics(text: str) -> dict[str, float]:
    """The samples of a Prometheus text page, by name with labels (`name{label="v"}`)."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?)\s+(\S+)$", line.strip())
        if match and not line.startswith("#"):
            with contextlib.suppress(ValueError):
                found[match.group(1)] = float(match.group(2))
    return found


def judge_over_http(server: Server, items: list[tuple[Base, Path]], clients: int, clock: Clock
                    ) -> tuple[dict[int, dict], list[float], float]:  # fmt: skip
    """Stage 4: `clients` threads, each submitting the next variant and long-polling for its verdict."""
    from cuda_agent.service.client import RemoteJudge, RemoteJudgeError
    from cuda_agent.service.submission import from_folder

    records: dict[int, dict] = {}
    latencies: list[float] = []
    todo = list(range(len(items)))
    lock = threading.Lock()
    tally = Tally(clock, "http", items)
    errors: list[str] = []

    def client() -> None:
        timeout = max(1.0, min(3600.0, clock.left()))
        with RemoteJudge(server.url, token=server.token, timeout_s=timeout) as remote:
            while True:
                with lock:
                    if not todo or clock.left() <= 0:
                        return
                    index = todo.pop(0)
                began = time.monotonic()
                try:
                    record = remote.wait(remote.submit(from_folder(items[index][1])))
                except RemoteJudgeError as exc:
                    with lock:
                        errors.append(f"{items[index][0].name}: {exc}")
                    return
                with lock:
                    latencies.append(time.monotonic() - began)
                    records[index] = record
                    tally(index, record)

    start = time.monotonic()
    threads = [threading.Thread(target=client, name=f"client-{k}") for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        clock.log(f"http: no verdict: {error}")
    return records, latencies, time.monotonic() - start


# ---- the figures -----------------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float | None:
    data = sorted(values)
    if not data:
        return None
    k = (len(data) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(data) - 1)
    return round(data[lo] + (data[hi] - data[lo]) * (k - lo), 3)


def _timing(record: dict[str, Any]) -> dict[str, Any]:
    return (record.get("verdict") or {}).get("timing") or {}


def _host_clock(record: dict[str, Any]) -> dict[str, Any]:
    return ((record.get("verdict") or {}).get("checks") or {}).get("host_clock") or {}


def _margins(record: dict[str, Any]) -> str:
    """The speedups' lower bounds against the thresholds they had to pass: a reward that differs between
    runs by a margin within the timing noise is the judge's threshold, not the service."""
    t = _timing(record)
    if "speedup_vs_eager_low" not in t:
        return ""
    charged = _host_clock(record).get("candidate_rounds_charged_by_host_clock")
    return (f" (eager {t['speedup_vs_eager_low']:.3f}/{t.get('eager_threshold', 1.05):.3f}, compile "
            f"{t['speedup_vs_compile_low']:.3f}/{t.get('compile_threshold', 1.05):.3f}"
            + (f", {charged}/{t.get('rounds')} rounds charged by the host clock" if charged is not None else "")
            + ")")  # fmt: skip


def run_facts(records: dict[int, dict], judged: list[Base]) -> dict[str, Any]:
    """What one run's verdicts say about the run itself: statuses, warm baselines, what each compiled,
    and the mean seconds of each stage (where its device time went)."""
    baselines = Counter(_timing(r).get("baseline_source") for r in records.values() if _timing(r))
    rebuilt: list[str] = []
    judge_binding = 0  # the judge's own binding.cpp: built once per judge process, never from a shared cache
    stages: dict[str, list[float]] = {}
    for index, record in sorted(records.items()):
        verdict = record.get("verdict") or {}
        compiled = ((verdict.get("checks") or {}).get("build") or {}).get("compiled")
        base = judged[index]
        changed = first_cu(base.folder)
        want = [f"kernels/{changed.name}"] if changed else []
        if compiled is not None and "binding.cpp" in compiled:
            judge_binding += 1
            compiled = [c for c in compiled if c != "binding.cpp"]
        if compiled is not None and sorted(compiled) != want:
            rebuilt.append(f"{base.name}: compiled {compiled}, expected {want}")
        for stage, seconds in (verdict.get("stage_seconds") or {}).items():
            stages.setdefault(stage, []).append(float(seconds))
    return {
        "verdicts": len(records), "statuses": dict(Counter(r["status"] for r in records.values())),
        "baselines": {str(k): v for k, v in baselines.items()}, "compiled_other_than_the_changed_file": rebuilt,
        "judge_binding_builds": judge_binding,
        "mean_stage_seconds": {k: round(statistics.mean(v), 3) for k, v in sorted(stages.items())},
        "host_clock": host_clock_facts(records),
        "disagrees_with_itself": self_disagreements(records, judged),
    }  # fmt: skip


def self_disagreements(records: dict[int, dict], judged: list[Base]) -> dict[str, list[str]]:
    """Submissions this run judged several times whose repeats did not all get one status and reward,
    with the rewards in order: the judge's own noise at a reward threshold, the floor under which a
    mismatch between the two runs says nothing about the service."""
    seen: dict[str, list[tuple[str, int]]] = {}
    for index, record in sorted(records.items()):
        seen.setdefault(judged[index].name, []).append((record["status"], int(record["reward"])))
    return {name: [f"{status} {reward:+d}" for status, reward in got]
            for name, got in seen.items() if len(set(got)) > 1}  # fmt: skip


def host_clock_facts(records: dict[int, dict]) -> dict[str, Any]:
    """Over the run's timed verdicts: how many rounds the host clock charged (median and most, of how many)
    and the candidate's per-call overhead beyond the reference's (median of the verdicts' medians, and the
    largest): where reward steps between two runs of one submission come from (docs/design/timing.md)."""
    clocks = [_host_clock(r) for r in records.values() if _timing(r)]
    charged = [int(c["candidate_rounds_charged_by_host_clock"]) for c in clocks if "candidate_rounds_charged_by_host_clock" in c]
    excess = [float(m["timed"]) for c in clocks if isinstance(m := c.get("excess_median_ms"), dict) and m.get("timed") is not None]
    return {"timed_verdicts": len(clocks), "charged_rounds_median": statistics.median(charged) if charged else None,
            "charged_rounds_max": max(charged) if charged else None,
            "excess_ms_median": round(statistics.median(excess), 4) if excess else None,
            "excess_ms_max": round(max(excess), 4) if excess else None}  # fmt: skip


def item(target: str, value: Any, met: bool | None) -> dict[str, Any]:
    return {"target": target, "value": value, "met": met}


def done_when(judged: list[Base], local: dict[int, dict] | None, http: dict[int, dict] | None, clients: int,
              local_s: float | None, http_s: float | None, aa_idle_ms: list[float], aa_loaded_ms: list[float],
              build_only: bool, metrics: dict[str, float] | None) -> dict[str, dict[str, Any]]:  # fmt: skip
    """The issue's H200 Done-when, item by item, from recorded verdicts (`met` None: does not apply on
    the CPU). A run that did not reach a stage leaves its items unmet, never passed."""
    n = len(judged)
    local, http = local or {}, http or {}
    gpu = None if build_only else True
    got = [i for i in range(n) if i in http and http[i]["status"] != "judge_error"]
    out = {"judgments": item(f">= {MIN_JUDGMENTS} judgments through `cuda-agent serve`, each with a verdict",
                             {"planned": n, "with_verdict": len(got)}, n >= MIN_JUDGMENTS and len(got) == n)}  # fmt: skip
    out["clients"] = item(f">= {MIN_CLIENTS} concurrent HTTP clients", clients, clients >= MIN_CLIENTS)
    noisy = set(self_disagreements(local, judged)) | set(self_disagreements(http, judged))
    mismatches = [f"{judged[i].name}: http {http[i]['status']} {http[i]['reward']}{_margins(http[i])}, local "
                  f"{local[i]['status']} {local[i]['reward']}{_margins(local[i])}"
                  + ("; its repeats within one run disagree too" if judged[i].name in noisy else "")
                  for i in range(n) if i in http and i in local
                  and (http[i]["status"], http[i]["reward"]) != (local[i]["status"], local[i]["reward"])]  # fmt: skip
    compared = sum(1 for i in range(n) if i in http and i in local)
    out["identical"] = item("status and reward identical to the local judge_many's on the same submissions",
                            {"compared": compared, "mismatches": mismatches}, compared == n and not mismatches)  # fmt: skip
    honest = [i for i in range(n) if judged[i].expected == "ok"]
    not_ok = [f"{where} {judged[i].name}: {run[i]['status']} ({str(run[i].get('reason'))[:160]})"
              for where, run in (("http", http), ("local", local)) for i in honest
              if i in run and run[i]["status"] != "ok" and not build_only]  # fmt: skip
    seen = sum(1 for i in honest if i in http)
    out["honest_ok"] = item("every honest case ok (through the service, and locally)",
                            {"honest_judgments": len(honest), "not_ok": not_ok},
                            None if build_only else bool(honest) and seen == len(honest) and not not_ok)  # fmt: skip
    ratio = None
    if local_s and http_s and len(local) == n and len(http) == n:
        ratio = round((n / http_s) / (n / local_s), 4)
    out["throughput"] = item(f"service verdicts/hour >= {TARGET_THROUGHPUT:.0%} of local judge_many's, same run",
                             ratio, ratio is not None and ratio >= TARGET_THROUGHPUT)  # fmt: skip
    aa = None
    if aa_idle_ms and aa_loaded_ms:
        aa = round(statistics.median(aa_loaded_ms) / statistics.median(aa_idle_ms), 4)
    out["aa"] = item(f"A/A (one honest kernel, service under load / idle) within 1 +/- {TARGET_AA}",
                     {"ratio": aa, "loaded_ms": aa_loaded_ms, "idle_ms": aa_idle_ms},
                     None if build_only else aa is not None and abs(aa - 1) <= TARGET_AA)  # fmt: skip
    # Conditions of a fair comparison: both runs warm and building the same thing; the server counted it.
    facts = {"local": run_facts(local, judged), "http": run_facts(http, judged)}
    measured = {k: f["baselines"].get("measured", 0) for k, f in facts.items()}
    timed = {k: sum(f["baselines"].values()) for k, f in facts.items()}
    out["warm"] = item("both runs warm: every timed verdict used the baselines the priming pass measured",
                       {"measured_in_run": measured, "timed": timed},
                       None if build_only else gpu and not any(measured.values()) and all(timed.values()))  # fmt: skip
    rebuilt = {k: f["compiled_other_than_the_changed_file"] for k, f in facts.items()}
    out["same_builds"] = item("each judgment compiled its changed .cu and nothing else (but the judge's own binding.cpp, once "
                              "per judge process), in both runs",
                              rebuilt, bool(local) and bool(http) and not any(rebuilt.values()))  # fmt: skip
    counted = {k.split('"')[1]: int(v) for k, v in (metrics or {}).items()
               if k.startswith("cuda_agent_judge_verdicts_total{")}  # fmt: skip
    statuses = dict(Counter(r["status"] for r in http.values()))
    lanes = (metrics or {}).get("cuda_agent_judge_lanes")
    out["metrics"] = item("the server's /metrics counted every verdict by status" + ("" if build_only else " on 1 GPU lane"),
                          {"counted": counted, "verdicts": statuses, "lanes": lanes},
                          metrics is not None and counted == statuses and (build_only or lanes == 1.0))  # fmt: skip
    return out


def summary(args: argparse.Namespace, bases: list[Base], judged: list[Base], state: dict[str, Any],
            clock: Clock) -> dict[str, Any]:  # fmt: skip
    local, http = state.get("local"), state.get("http")
    local_s, http_s = state.get("local_s"), state.get("http_s")
    aa_loaded = [_timing(r)["candidate_ms"] for i, r in sorted((http or {}).items())
                 if judged[i].name == args.aa_example and _timing(r)]  # fmt: skip
    checks = done_when(judged, local, http, args.clients, local_s, http_s, state.get("prime", {}).get("aa_idle_ms", []),
                       aa_loaded, args.build_only, state.get("metrics"))  # fmt: skip
    passed = all(c["met"] for c in checks.values() if c["met"] is not None)
    as_expected = {run: sum(1 for i, r in (records or {}).items() if r["status"] == judged[i].expected)
                   for run, records in (("local", local), ("http", http))}  # fmt: skip

    def rate(count: int, seconds: float | None) -> float | None:
        return round(3600 * count / seconds) if seconds else None

    return {
        "n": len(judged), "clients": args.clients, "build_only": args.build_only, "phase": args.phase,
        "bases": [{"name": b.name, "expected": b.expected, "task": b.task[:12]} for b in bases],
        "distinct_tasks": len({b.task for b in bases}), "aa_example": args.aa_example,
        "judge_cache": state.get("judge_cache"), "stage_seconds": state.get("stages", {}),
        "priming": state.get("prime"), "not_reached": state.get("not_reached", []),
        # to the 0.1 ms: a build-only run of instant task errors took under 5 ms, which 2 decimals made 0.0
        "local_seconds": round(local_s, 4) if local_s else None, "service_seconds": round(http_s, 4) if http_s else None,
        "local_per_hour": rate(len(local or {}), local_s), "service_per_hour": rate(len(http or {}), http_s),
        "latency_p50_s": percentile(state.get("latencies", []), 0.5),
        "latency_p99_s": percentile(state.get("latencies", []), 0.99),
        "as_expected": as_expected,
        "runs": {"local": run_facts(local or {}, judged), "http": run_facts(http or {}, judged)},
        "done_when": checks, "passed": passed, "elapsed_s": round(clock.elapsed(), 1),
        "warm_note": "both runs measured warm, after one shared priming pass that measured each task's baselines "
                     "once into the judge cache the server also reads",
    }  # fmt: skip


def report(result: dict[str, Any]) -> None:
    local_s, http_s = result["local_seconds"], result["service_seconds"]
    print(f"\n{result['n']} judgments per run over {len(result['bases'])} submissions of {result['distinct_tasks']} "
          f"task(s); {result['warm_note']}")  # fmt: skip
    print(f"stage seconds: {json.dumps(result['stage_seconds'])}")
    priming = result.get("priming") or {}
    sources = Counter(t.get("baselines") for t in (priming.get("tasks") or {}).values())
    if priming:
        print(f"priming ({priming.get('seconds')} s): baselines of {len(priming.get('tasks') or {})} task(s) "
              f"({sources.get('measured', 0)} measured, {sources.get('cached', 0)} already cached), "
              f"{sum((priming.get('built') or {}).values())} folder(s) built on the CPU; "
              f"idle A/A ms {priming.get('aa_idle_ms')}")  # fmt: skip
    print(f"\n{'path':<22}{'verdicts':>9}{'seconds':>9}{'verdicts/h':>12}{'p50 s':>8}{'p99 s':>8}")
    print(f"{'local judge_many':<22}{result['runs']['local']['verdicts']:>9}{local_s or 0:>9.1f}"
          f"{result['local_per_hour'] or 0:>12}")  # fmt: skip
    http_label = f"HTTP, {result['clients']} clients"
    print(f"{http_label:<22}{result['runs']['http']['verdicts']:>9}{http_s or 0:>9.1f}"
          f"{result['service_per_hour'] or 0:>12}{result['latency_p50_s'] or 0:>8.2f}{result['latency_p99_s'] or 0:>8.2f}\n")  # fmt: skip
    for name, check in result["done_when"].items():
        mark = "n/a " if check["met"] is None else "PASS" if check["met"] else "FAIL"
        value = json.dumps(check["value"])
        print(f"{mark}  {name:<12}{check['target']}: {value if len(value) < 300 else value[:300] + '...'}")
    for where, facts in result["runs"].items():
        if facts.get("disagrees_with_itself"):
            print(f"note  {where} run: repeats of one submission disagreed within the run (the judge's noise at a "
                  f"reward threshold): {json.dumps(facts['disagrees_with_itself'])}")
    for what in result["not_reached"]:
        print(f"NOT REACHED  {what}")
    print(f"\n{'PASSED' if result['passed'] else 'NOT PASSED'} ({result['elapsed_s']} s)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--n", type=int, default=MIN_JUDGMENTS, help=f"judgments per run (default {MIN_JUDGMENTS})"
    )
    parser.add_argument(
        "--clients", type=int, default=MIN_CLIENTS, help=f"concurrent HTTP clients ({MIN_CLIENTS})"
    )
    parser.add_argument(
        "--honest", type=int, default=3, help="honest adversarial cases of one shared task (3)"
    )
    parser.add_argument("--bases", help="comma-separated submissions to judge instead (smoke runs)")
    parser.add_argument(
        "--aa-example", default="row_softmax", help="the honest kernel of the A/A (row_softmax)"
    )
    parser.add_argument("--aa-reps", type=int, default=3, help="idle A/A judgments (3)")
    parser.add_argument("--deadline-s", type=float, help="stop by then, keeping what was measured")
    parser.add_argument("--phase", choices=("all", "local", "service"), default="all",
                        help="local: stages 1-3, kept in --out; service: stage 4 against them (default all)")  # fmt: skip
    parser.add_argument("--build-only", action="store_true", help="CPU checks only (no GPU)")
    parser.add_argument(
        "--workers", type=int, default=2, help="CPU workers with --build-only, and priming builds (2)"
    )
    parser.add_argument("--out", type=Path, default=Path("judge-service-bench"))
    parser.add_argument(
        "--state", type=Path, help="where --phase local keeps its results for --phase service (--out)"
    )
    args = parser.parse_args(argv)
    for name in ("n", "clients", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.aa_reps < 0 or args.honest < 0:
        parser.error("--aa-reps and --honest cannot be negative")
    if args.deadline_s is not None and args.deadline_s <= 0:
        parser.error("--deadline-s must be positive")
    args.only = [s.strip() for s in args.bases.split(",") if s.strip()] if args.bases else None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    bases = choose_bases(args.honest, args.only)
    if not args.build_only and args.aa_reps and args.aa_example not in {b.name for b in bases}:
        raise SystemExit(f"error: the A/A example {args.aa_example} is not among the bases judged "
                         f"({', '.join(b.name for b in bases)})")  # fmt: skip
    aa = next((b for b in bases if b.name == args.aa_example), None)
    if aa is not None and aa.expected != "ok" and not args.build_only:
        raise SystemExit(f"error: the A/A example must be an honest kernel (expected ok); {aa.name} is not")
    judged = plan(bases, args.n)
    state_path = (args.state or args.out) / STATE_FILE
    if args.phase == "service" and not state_path.is_file():
        raise SystemExit(
            f"error: --phase service needs {state_path}, written by --phase local with the same --state"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    clock = Clock(args.deadline_s)

    from cuda_agent.judge import BuildConfig, JudgeConfig, cache_root, default_arch

    config = JudgeConfig(build=BuildConfig(arch=default_arch()))
    state: dict[str, Any] = {"judge_cache": str(cache_root()), "stages": {}, "not_reached": []}
    if args.phase == "service":
        kept = json.loads(state_path.read_text())
        if kept["plan"] != [b.name for b in judged] or kept["build_only"] != args.build_only:
            raise SystemExit(
                f"error: {state_path} is for another plan (--n/--honest/--bases/--build-only differ)"
            )
        state.update(prime=kept["prime"], local={int(k): v for k, v in kept["local"].items()},
                     local_s=kept["local_s"], stages=kept["stages"])  # fmt: skip
        state["stages"]["between_phases_s"] = round(time.time() - kept["finished_at"], 1)

    def save() -> dict[str, Any]:
        result = summary(args, bases, judged, state, clock)
        (args.out / "judge_service.json").write_text(json.dumps(result, indent=2))
        return result

    clock.log(f"{args.n} judgments per run over {len(bases)} submissions ({len({b.task for b in bases})} tasks), "
              f"{args.clients} HTTP clients, judge cache {state['judge_cache']}"
              + (f", deadline {args.deadline_s:.0f} s" if args.deadline_s else ""))  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="judge-service-bench-") as tmp:
        root = Path(tmp)
        if args.phase in ("all", "local"):
            began = time.monotonic()
            state["prime"] = prime(
                bases, aa, args.aa_reps, root, config, args.build_only, args.workers, clock
            )
            state["stages"]["prime_s"] = round(time.monotonic() - began, 1)
            save()
            if clock.left() < 30:
                state["not_reached"].append(f"local run not started: {clock.left():.0f} s left after priming")
                report(save())
                return 1
            items = [(b, variant(b, root / f"local-{i:03d}", f"local-{i}")) for i, b in enumerate(judged)]
            clock.log(f"local judge_many: {args.n} judgments")
            began = time.monotonic()
            state["local"], state["local_s"] = judge_locally(
                items, config, args.build_only, args.workers, clock
            )
            state["stages"]["local_s"] = round(time.monotonic() - began, 1)
            save()
            complete = len(state["local"]) == args.n
            if complete:  # kept even in one go: a run out of time is finished by --phase service
                state_path.parent.mkdir(parents=True, exist_ok=True)
                state_path.write_text(json.dumps({
                    "plan": [b.name for b in judged], "build_only": args.build_only, "prime": state["prime"],
                    "local": state["local"], "local_s": state["local_s"], "stages": state["stages"],
                    "finished_at": time.time(),
                }))  # fmt: skip
            if args.phase == "local":
                clock.log(f"local phase kept in {state_path}; next: --phase service with the same --state")
                report(save())
                return 0 if complete else 1
        # The service run needs about as long as the local one: do not start what cannot finish.
        need = 1.05 * (state.get("local_s") or 0) + 20
        if clock.left() < need:
            hint = (
                f"; the local run is kept in {state_path}: --phase service finishes it"
                if args.phase == "all"
                else ""
            )
            state["not_reached"].append(
                f"service run not started: needs ~{need:.0f} s, {clock.left():.0f} s left{hint}"
            )
        else:
            items = [(b, variant(b, root / f"http-{i:03d}", f"http-{i}")) for i, b in enumerate(judged)]
            began = time.monotonic()
            try:
                server = Server(root / "server", args.build_only, args.workers, args.n, clock)
            except RuntimeError as exc:  # its log is in the message and in --out
                state["not_reached"].append(f"service run not started: {exc}")
                shutil.copyfile(root / "server" / "server.log", args.out / "server.log")
            else:
                state["stages"]["server_start_s"] = round(time.monotonic() - began, 1)
                try:
                    clock.log(f"service: {args.n} judgments from {args.clients} clients at {server.url}")
                    state["http"], state["latencies"], state["http_s"] = judge_over_http(
                        server, items, args.clients, clock
                    )
                    state["stages"]["service_s"] = round(state["http_s"], 1)
                    state["metrics"] = server.metrics()
                finally:
                    server.stop()
                    shutil.copyfile(root / "server" / "server.log", args.out / "server.log")
    lines = [json.dumps({"index": i, "submission": b.name, "expected": b.expected,
                         "local": (state.get("local") or {}).get(i), "http": (state.get("http") or {}).get(i)},
                        sort_keys=True) for i, b in enumerate(judged)]  # fmt: skip
    (args.out / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    result = save()
    report(result)
    return 0 if result["passed"] else 1


def entry() -> int:
    from cuda_agent.judge import JudgeUnavailable

    try:
        return main()
    except JudgeUnavailable as exc:
        print(f"error: {exc}\nhint: --build-only runs the same comparison on the CPU checks", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(entry())
