"""The judge server under load and faults: nothing lost, nothing duplicated, nothing judged twice, every
verdict the in-process judge's.

    python benchmarks/judge_service_faults.py [--n 1000] [--clients 20] [--graceful 3] [--kills 2]
                                              [--slow 100] [--probe-share 0.1] [--build-only]
                                              [--examples] [--out DIR]

`--clients` threads submit `--n` distinct submissions (each with its own idempotency key, retried through
connection errors, 429 and 503 until accepted), then long-poll each for its verdict. Meanwhile the server
is restarted gracefully (SIGTERM) `--graceful` times and killed (SIGKILL) `--kills` times, spread over
the run, always on the same port and data folder, while `--slow` connections send request headers a byte
at a time (reopened whenever the server closes them). Afterwards every submission is judged again in
this process (`check_on_cpu` with `--build-only`, else one `JudgeService.judge_many`) and compared.

Submissions: with `--build-only`, a broken task (task_error at once) or, for `--probe-share` of them, the
elementwise_chain task without kernels (the task probe runs, then compile_error); with `--examples`,
variants of the bundled examples (a unique comment in the first .cu: every one really compiles), for a
GPU host. Figures (judge_service_faults.json in `--out`): lost, duplicated (a key answered with two ids,
or rows without a key), judged twice (a judgment given two verdicts: two `state=done` log lines),
verdicts that differ from the in-process judge's, p50/p99 of submit and poll latency, the restarts and
kills made, and a `done_when` map; exit 0 only if every item is met.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

import httpx  # noqa: E402 - after the path

from cuda_agent.service.launch import ServerProcess  # noqa: E402

TASK = (REPO / "examples" / "elementwise_chain" / "model.py").read_text()
MODEL_NEW = (REPO / "examples" / "elementwise_chain" / "model_new.py").read_text()
SLOW_BY_DESIGN = frozenset({"build_hang", "infinite_loop"})
HEAD = (
    b"POST /v1/judgments HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nX-Pad: "
    + b"p" * 100_000
)


# ---- submissions ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sub:
    key: str
    files: dict[str, str]
    task: str
    task_name: str

    def body(self) -> dict[str, Any]:
        return {"files": self.files, "task": self.task, "task_name": self.task_name}

    def lay_out(self, folder: Path) -> Path:
        for path, text in self.files.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
        (folder / "model.py").write_text(self.task)
        return folder


def cpu_submissions(n: int, probe_share: float, nonce: str) -> list[Sub]:
    rng = random.Random(7)
    subs = []
    for i in range(n):
        if rng.random() < probe_share:
            subs.append(
                Sub(
                    f"{nonce}-{i}",
                    {"model_new.py": MODEL_NEW + f"\n# {nonce} {i}\n"},
                    TASK,
                    "elementwise_chain",
                )
            )
        else:
            subs.append(Sub(f"{nonce}-{i}", {"model_new.py": f"# {i}\n"}, f"broken task {i} (", f"broken{i}"))
    return subs


def example_submissions(n: int, nonce: str) -> list[Sub]:
    bases = [f for f in sorted((REPO / "examples").iterdir())
             if (f / "model.py").is_file() and (f / "model_new.py").is_file() and f.name not in SLOW_BY_DESIGN]  # fmt: skip
    subs = []
    for i in range(n):
        base = bases[i % len(bases)]
        files = {"model_new.py": (base / "model_new.py").read_text()}
        cus = sorted((base / "kernels").glob("*")) if (base / "kernels").is_dir() else []
        for index, path in enumerate(p for p in cus if p.is_file()):
            text = path.read_text()
            files[f"kernels/{path.name}"] = text + (
                f"\n// {nonce} {i}\n" if index == 0 and path.suffix == ".cu" else ""
            )
        subs.append(Sub(f"{nonce}-{i}", files, (base / "model.py").read_text(), base.name))
    return subs


# ---- the run --------------------------------------------------------------------------------------------
@dataclass
class Tally:
    ids: dict[str, set[str]] = field(default_factory=dict)  # key -> ids the server answered
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> the judgment when done
    submit_s: list[float] = field(default_factory=list)
    poll_s: list[float] = field(default_factory=list)
    refused: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


def client(url: str, token: str, subs: list[Sub], tally: Tally, deadline: float) -> None:
    """Submit each of `subs` until accepted, then wait for each verdict; through restarts and kills."""
    with httpx.Client(base_url=url + "/v1", headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        accepted: list[tuple[Sub, str]] = []
        for sub in subs:
            while time.monotonic() < deadline:
                try:
                    start = time.perf_counter()
                    response = http.post("/judgments", json=sub.body(), headers={"Idempotency-Key": sub.key})
                    elapsed = time.perf_counter() - start
                except httpx.TransportError:
                    time.sleep(0.2)
                    continue
                if response.status_code in (200, 202):
                    with tally.lock:
                        tally.submit_s.append(elapsed)
                        tally.ids.setdefault(sub.key, set()).add(response.json()["id"])
                    accepted.append((sub, response.json()["id"]))
                    break
                with tally.lock:
                    tally.refused[response.status_code] += 1
                time.sleep(min(float(response.headers.get("retry-after", "0.5")), 2.0))
        for sub, judgment_id in accepted:
            while time.monotonic() < deadline:
                try:  # a plain poll (its latency measured), then a long poll while there is no verdict
                    start = time.perf_counter()
                    response = http.get(f"/judgments/{judgment_id}")
                    elapsed = time.perf_counter() - start
                    if response.status_code == 200 and response.json()["state"] != "done":
                        response = http.get(f"/judgments/{judgment_id}", params={"wait": 5})
                except httpx.TransportError:
                    time.sleep(0.2)
                    continue
                if response.status_code != 200:
                    time.sleep(0.2)
                    continue
                record = response.json()
                with tally.lock:
                    tally.poll_s.append(elapsed)
                    if record["state"] == "done":
                        tally.verdicts[sub.key] = record
                if record["state"] == "done":
                    break


class SlowClients:
    """`count` connections sending HEAD a byte at a time; a connection the server closes is reopened."""

    def __init__(self, port: int, count: int) -> None:
        self.port, self.count = port, count
        self.socks: list[socket.socket | None] = [None] * count
        self.reopened = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        offsets = [0] * self.count
        while not self.stop.is_set():
            for i in range(self.count):
                sock = self.socks[i]
                try:
                    if sock is None:
                        sock = socket.create_connection(("127.0.0.1", self.port), timeout=1)
                        sock.setblocking(False)
                        self.socks[i], offsets[i] = sock, 0
                        self.reopened += 1
                    sock.send(HEAD[offsets[i] : offsets[i] + 1])
                    offsets[i] = (offsets[i] + 1) % len(HEAD)
                except OSError:
                    if sock is not None:
                        sock.close()
                    self.socks[i] = None
            self.stop.wait(0.1)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for sock in self.socks:
            if sock is not None:
                sock.close()


class Progress:
    """One line on stderr every `every_s` seconds while the run lasts: accepted, verdicts, faults made."""

    def __init__(self, tally: Tally, n: int, start: float, faults: list, every_s: float = 15.0) -> None:
        self.tally, self.n, self.start, self.faults, self.every_s = tally, n, start, faults, every_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def line(self) -> str:
        return (f"[faults] {time.monotonic() - self.start:6.0f} s: {len(self.tally.ids)}/{self.n} accepted, "
                f"{len(self.tally.verdicts)}/{self.n} verdicts, {len(self.faults)} fault(s) made")  # fmt: skip

    def _run(self) -> None:
        while not self.stop.wait(self.every_s):
            print(self.line(), file=sys.stderr, flush=True)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(1)
        print(self.line(), file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out)
    state = out / "server"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    token = secrets.token_urlsafe(32)
    (state / "tokens").write_text(token + "\n")
    port = free_port()
    server_args = ["--token-file", str(state / "tokens"), "--data-dir", str(state / "data"), "--port", str(port),
                   "--max-pending", str(args.max_pending), *(["--build-only", "--workers", str(args.workers)]
                   if args.build_only else [])]  # fmt: skip
    env = {"CUDA_AGENT_CACHE": str(out / "cache"), "PYTHONUNBUFFERED": "1"}
    nonce = secrets.token_hex(4)
    subs = (
        example_submissions(args.n, nonce)
        if args.examples
        else cpu_submissions(args.n, args.probe_share, nonce)
    )
    tally = Tally()
    start = time.monotonic()
    deadline = start + args.deadline_s
    server = ServerProcess(state, server_args, env=env, timeout_s=300)
    url = server.url
    slow = SlowClients(port, args.slow)
    faults: list[dict[str, Any]] = []
    shares = [subs[i :: args.clients] for i in range(args.clients)]
    ticker = Progress(tally, args.n, start, faults)
    with ThreadPoolExecutor(args.clients) as pool:
        futures = [pool.submit(client, url, token, share, tally, deadline) for share in shares]
        plan = ["graceful"] * args.graceful + ["kill"] * args.kills
        random.Random(11).shuffle(plan)
        for index, fault in enumerate(plan):
            goal = (index + 1) * 2 * args.n // (len(plan) + 1)  # spread over the run: acceptances + verdicts
            while (len(tally.ids) + len(tally.verdicts) < goal and time.monotonic() < deadline
                   and not all(f.done() for f in futures)):  # fmt: skip
                time.sleep(0.05)
            began = time.monotonic()
            server.kill() if fault == "kill" else server.stop()
            server = ServerProcess(state, server_args, env=env, timeout_s=300)
            faults.append({"fault": fault, "accepted": len(tally.ids), "verdicts": len(tally.verdicts),
                           "down_s": round(time.monotonic() - began, 2)})  # fmt: skip
        for future in futures:
            future.result()
    ticker.close()
    wall = time.monotonic() - start
    slow.close()
    log = server.log_tail(1 << 30)
    server.stop()
    return {"subs": subs, "tally": tally, "faults": faults, "wall_s": wall, "log": log, "reopened": slow.reopened,
            "db": state / "data" / "judgments.sqlite"}  # fmt: skip


def reference(subs: list[Sub], build_only: bool, workers: int) -> dict[str, dict[str, Any]]:
    """key -> (status, reward, reason) of the in-process judge for each submission."""
    root = Path(tempfile.mkdtemp(prefix="faults-ref-"))
    try:
        folders = [sub.lay_out(root / str(i)) for i, sub in enumerate(subs)]
        if build_only:
            from cuda_agent.judge import BuildConfig, JudgeConfig, check_on_cpu

            config = JudgeConfig(build=BuildConfig(arch="9.0"))
            with ThreadPoolExecutor(workers) as pool:
                verdicts = list(pool.map(lambda f: check_on_cpu(f, None, config)[0], folders))
        else:
            from cuda_agent.judge import JudgeService

            verdicts = [None] * len(folders)
            with JudgeService(keep_warm=True) as service:
                for index, verdict in service.judge_many(folders):
                    verdicts[index] = verdict
        return {sub.key: {"status": v.status.value, "reward": v.reward, "reason": v.reason}
                for sub, v in zip(subs, verdicts, strict=True)}  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


def summarise(
    result: dict[str, Any], ref: dict[str, dict[str, Any]], args: argparse.Namespace
) -> dict[str, Any]:
    import sqlite3

    subs, tally = result["subs"], result["tally"]
    lost = [s.key for s in subs if s.key not in tally.verdicts]
    duplicated = [k for k, ids in tally.ids.items() if len(ids) != 1]
    db = sqlite3.connect(f"file:{result['db']}?mode=ro", uri=True)
    rows = db.execute("SELECT idempotency_key, state FROM judgments").fetchall()
    db.close()
    keys = Counter(k for k, _ in rows)
    duplicated += [k for k, c in keys.items() if c > 1 or k is None]
    done_lines = Counter(re.findall(r"judgment id=(\w+) .*? state=done", result["log"]))
    judged_twice = sorted(i for i, c in done_lines.items() if c > 1)
    # started again after a kill or restart stopped its run (the one attempt a restart may cost): information
    rerun = sum(
        1
        for c in Counter(re.findall(r"judgment id=(\w+) .*? state=running", result["log"])).values()
        if c > 1
    )
    differ = [{"key": k, "server": {f: tally.verdicts[k].get(f) for f in ("status", "reward")}, "local": ref[k]}
              for k in tally.verdicts if (tally.verdicts[k].get("status"), tally.verdicts[k].get("reward"))
              != (ref[k]["status"], ref[k]["reward"])]  # fmt: skip

    def pct(values: list[float], q: float) -> float | None:
        return round(statistics.quantiles(values, n=100)[q - 1] * 1000, 2) if len(values) >= 2 else None

    figures = {
        "n": len(subs), "clients": args.clients, "slow_clients": args.slow, "faults": result["faults"],
        "wall_s": round(result["wall_s"], 1), "verdicts": len(tally.verdicts), "lost": len(lost),
        "duplicated": len(duplicated), "judged_twice": len(judged_twice), "differ_from_in_process": len(differ),
        "rerun_after_a_fault": rerun, "rows": len(rows), "rows_done": sum(1 for _, s in rows if s == "done"),
        "submit_ms": {"p50": pct(tally.submit_s, 50), "p99": pct(tally.submit_s, 99), "count": len(tally.submit_s)},
        "poll_ms": {"p50": pct(tally.poll_s, 50), "p99": pct(tally.poll_s, 99), "count": len(tally.poll_s)},
        "refused": dict(tally.refused), "slow_connections_reopened": result["reopened"],
        "statuses": dict(Counter(v.get("status") for v in tally.verdicts.values())),
        "examples": {"lost": lost[:5], "duplicated": duplicated[:5], "judged_twice": judged_twice[:5], "differ": differ[:5]},
    }  # fmt: skip
    figures["done_when"] = {
        "0 lost": not lost, "0 duplicated": not duplicated, "0 judged twice": not judged_twice,
        "every verdict the in-process judge's": not differ and len(tally.verdicts) == len(subs),
        "faults made": len(result["faults"]) == args.graceful + args.kills,
    }  # fmt: skip
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--graceful", type=int, default=3)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--slow", type=int, default=100)
    parser.add_argument(
        "--probe-share", type=float, default=0.1, help="--build-only: share that run the task probe"
    )
    parser.add_argument("--build-only", action="store_true", help="CPU checks only (no GPU)")
    parser.add_argument("--examples", action="store_true", help="variants of the bundled examples (GPU host)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument("--max-pending", type=int, default=64)
    parser.add_argument("--deadline-s", type=float, default=3000.0)
    parser.add_argument("--out", type=Path, default=Path("judge-service-faults"))
    args = parser.parse_args(argv)
    if args.clients < 1 or args.n < 1:
        parser.error("--n and --clients must be at least 1")
    args.out.mkdir(parents=True, exist_ok=True)
    result = run(args)
    print(f"[faults] judging the {args.n} submissions again in this process to compare verdicts", file=sys.stderr,
          flush=True)  # fmt: skip
    ref = reference(result["subs"], args.build_only, args.workers)
    figures = summarise(result, ref, args)
    (args.out / "judge_service_faults.json").write_text(json.dumps(figures, indent=2, sort_keys=True))
    print(json.dumps({k: v for k, v in figures.items() if k != "examples"}, indent=2, sort_keys=True))
    return 0 if all(figures["done_when"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
