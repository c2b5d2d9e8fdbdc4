"""The judge service under load and faults: nothing lost, nothing judged twice, the local judge's verdicts.

A real `cuda-agent serve` (a child process on a fixed local port) takes `--n` submissions from `--clients`
concurrent clients (the real `RemoteJudge` client code, each submission under its own idempotency key,
retried across restarts), while the run restarts the server gracefully `--restarts` times (SIGTERM, start
again on the same data) and kills it `--kills` times (SIGKILL), and `--slow` clients hold connections open
by sending request headers one byte at a time. At the end every submission must have exactly one judgment
(0 lost, 0 duplicated), no judgment may have been dispatched more often than the kills it lived through
allow (0 judged twice), and every verdict must equal the one the in-process judge gives the same submission.
It reports p50/p99 latency of submitting and of one poll, and the slow clients' fate.

    python benchmarks/service_faults.py [--n 1000] [--clients 20] [--restarts 3] [--kills 2] [--slow 100]
                                        [--real-share 0.1] [--gpu] [--out DIR]

Submissions: a share `--real-share` are the bundled elementwise example with a unique comment (a valid task
the judge really checks: the task probe and the build, cached after the first), the rest a task that does
not load (its verdict is immediate), so the run measures the service, not the compiler. On a CPU machine
the server runs `--build-only` (the CPU checks); `--gpu` judges on the GPU (use smaller counts there).
Prints a table, writes OUT/service_faults.json; exits 0 only if every count that must be 0 is 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from cuda_agent.service.client import RemoteJudge, RemoteJudgeError
from cuda_agent.service.launch import ServerProcess
from cuda_agent.service.submission import Submission

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "elementwise_chain"
TOKEN = "bench-token-" + "f" * 32


def submissions(n: int, real_share: float) -> list[Submission]:
    """`n` distinct submissions: every round(1 / real_share)-th a real one, the rest with a broken task."""
    every = max(1, round(1 / real_share)) if real_share > 0 else n + 1
    task, model_new = (EXAMPLE / "model.py").read_text(), (EXAMPLE / "model_new.py").read_text()
    kernels = {f"kernels/{p.name}": p.read_bytes() for p in sorted((EXAMPLE / "kernels").iterdir()) if p.is_file()}
    out = []
    for i in range(n):
        if i % every == 0:
            files = {"model_new.py": (model_new + f"\n# variant {i}\n").encode(), **kernels}
            out.append(Submission(files=files, task_source=task, task_name="elementwise_chain"))
        else:
            out.append(Submission(files={"model_new.py": f"# broken {i}\n".encode()},
                                  task_source=f"this task does not load {i} (", task_name=f"broken{i}"))  # fmt: skip
    return out


def local_verdicts(items: list[Submission], gpu: bool) -> dict[str, tuple[Any, ...]]:
    """The in-process judge's (status, reward, reason) for one representative of each kind (the real
    variants differ only in a comment; a broken task's reason quotes its own source, so only its status
    and reward are compared)."""
    from cuda_agent.judge import BuildConfig, JudgeConfig, check_on_cpu
    from cuda_agent.judge.decide.service import JudgeService

    out: dict[str, tuple[Any, ...]] = {}
    for kind, item in (("broken", items[1] if len(items) > 1 else items[0]), ("real", items[0])):
        with tempfile.TemporaryDirectory() as folder:
            item.write_to(Path(folder))
            if gpu:
                with JudgeService(JudgeConfig()) as service:
                    verdict = service.judge(Path(folder))
            else:
                verdict, _ = check_on_cpu(Path(folder), None, JudgeConfig(build=BuildConfig(arch="9.0")))
        out[kind] = (verdict.status.value, verdict.reward, verdict.reason)
    return out


class Faults:
    """The server, restarted on the same port and data: gracefully (SIGTERM) or killed (SIGKILL)."""

    def __init__(self, state: Path, port: int, gpu: bool) -> None:
        self.state, self.port, self.gpu = state, port, gpu
        (state / "tokens").write_text(TOKEN + "\n")
        self.events: list[dict[str, Any]] = []
        self.server = self._start()

    def _start(self) -> ServerProcess:
        args = ["--port", str(self.port), "--token-file", str(self.state / "tokens"),
                "--data-dir", str(self.state / "data"), "--max-pending", "100000",
                *(() if self.gpu else ("--build-only", "--workers", "2", "--arch", "9.0"))]  # fmt: skip
        return ServerProcess(self.state, args, env={"CUDA_AGENT_CACHE": str(self.state / "cache")},
                             ready="/v1/health", timeout_s=300)  # fmt: skip

    def restart(self, kill: bool) -> None:
        began = time.monotonic()
        if kill:
            self.server.kill()
        else:
            self.server.stop(grace_s=60)
        self.server = self._start()
        self.events.append({"kind": "kill -9" if kill else "graceful", "down_s": round(time.monotonic() - began, 2)})


def slow_client(port: int, stop: threading.Event, fate: dict[str, int], lock: threading.Lock) -> None:
    """Sends a request's headers one byte every 0.5 s (a 4 KB header: half an hour), reconnecting whenever
    the server closes the connection (`closed_by_server`) or is down (`refused`)."""
    header = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                with lock:
                    fate["opened"] += 1
                for byte in header:
                    if stop.wait(0.5):
                        return
                    sock.sendall(bytes([byte]))
                with lock:
                    fate["sent_whole_header"] += 1
        except ConnectionRefusedError:  # the server is restarting
            with lock:
                fate["refused"] += 1
            stop.wait(0.5)
        except OSError:
            with lock:
                fate["closed_by_server"] += 1
            stop.wait(0.5)


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="submissions (default 1000)")
    parser.add_argument("--clients", type=int, default=20, help="concurrent clients (default 20)")
    parser.add_argument("--restarts", type=int, default=3, help="graceful restarts during the run (default 3)")
    parser.add_argument("--kills", type=int, default=2, help="kill -9 during the run (default 2)")
    parser.add_argument("--slow", type=int, default=100, help="slow clients holding connections (default 100)")
    parser.add_argument("--real-share", type=float, default=0.1, help="share of real submissions (default 0.1)")
    parser.add_argument("--gpu", action="store_true", help="judge on the GPU (default: --build-only server)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: a temp folder)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="service-faults-"))
    out.mkdir(parents=True, exist_ok=True)
    items = submissions(args.n, args.real_share)
    print("[faults] the in-process judge's verdicts for the two kinds of submission ...", flush=True)
    expected = local_verdicts(items, args.gpu)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    faults = Faults(out, port, args.gpu)
    url = f"http://127.0.0.1:{port}"
    stop_slow = threading.Event()
    fate = {"opened": 0, "sent_whole_header": 0, "closed_by_server": 0, "refused": 0}
    fate_lock = threading.Lock()
    slow = [threading.Thread(target=slow_client, args=(port, stop_slow, fate, fate_lock), daemon=True)
            for _ in range(args.slow)]  # fmt: skip
    for thread in slow:
        thread.start()
    ids: dict[int, set[str]] = {i: set() for i in range(len(items))}
    records: dict[int, dict[str, Any]] = {}
    errors: dict[int, str] = {}
    submit_ms: list[float] = []
    poll_ms: list[float] = []
    accepted = [0]
    lock = threading.Lock()
    began = time.monotonic()

    def client(index: int) -> None:
        """Submit, poll once (timed), wait for the verdict; then the next: as an RL worker does."""
        poller = httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        with poller, RemoteJudge(url, token=TOKEN, retries=12, timeout_s=3600, poll_s=10) as remote:
            for i in range(index, len(items), args.clients):
                try:
                    t0 = time.monotonic()
                    judgment = remote.submit(items[i], key=f"bench-{i}")
                    t1 = time.monotonic()
                    with lock:
                        ids[i].add(judgment)
                        submit_ms.append(1000 * (t1 - t0))
                        accepted[0] += 1
                    try:  # one poll, timed (a restart in between loses the sample, not the judgment)
                        polled = poller.get(f"{url}/v1/judgments/{judgment}", params={"wait": 0})
                        if polled.status_code == 200:
                            with lock:
                                poll_ms.append(1000 * (time.monotonic() - t1))
                    except httpx.HTTPError:
                        pass
                    record = remote.wait(judgment)
                    again = remote.submit(items[i], key=f"bench-{i}")  # the same key: the same judgment
                    with lock:
                        ids[i].add(again)
                        records[i] = record
                except RemoteJudgeError as exc:
                    with lock:
                        errors[i] = str(exc)

    clients = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(args.clients)]
    for thread in clients:
        thread.start()
    plan = sorted([(f / (args.restarts + 1), False) for f in range(1, args.restarts + 1)]
                  + [(f / (args.kills + 1) - 0.05, True) for f in range(1, args.kills + 1)])  # fmt: skip
    kills_before: list[float] = []
    for share, kill in plan:
        while accepted[0] < share * len(items) and any(t.is_alive() for t in clients):
            time.sleep(0.1)
        if not any(t.is_alive() for t in clients):
            break
        print(f"[faults] {accepted[0]}/{len(items)} accepted: {'kill -9' if kill else 'graceful restart'}", flush=True)
        if kill:
            kills_before.append(time.time())
        faults.restart(kill)
    while any(t.is_alive() for t in clients):
        time.sleep(5)
        print(f"[faults] {len(records)}/{len(items)} verdicts, {time.monotonic() - began:.0f} s", flush=True)
    wall = time.monotonic() - began
    # the slow clients' hold on the server: an authenticated request answered while they are connected
    t0 = time.monotonic()
    health = httpx.get(url + "/v1/health", timeout=30).status_code
    answered_ms = 1000 * (time.monotonic() - t0)
    stop_slow.set()
    lost = [i for i in range(len(items)) if i not in records]
    duplicated = [i for i, found in ids.items() if len(found) > 1]
    judged_twice = [i for i, r in records.items() if int(r.get("attempts", 1)) > 1 + len(kills_before)]
    wrong = []
    for i, record in records.items():
        kind = "real" if items[i].task_name == "elementwise_chain" else "broken"
        status, reward, reason = expected[kind]
        got = (record.get("status"), record.get("reward"), record.get("reason"))
        if got[0] != status or got[1] != reward or (kind == "real" and got[2] != reason):
            wrong.append({"index": i, "kind": kind, "got": got, "expected": expected[kind]})
    metrics = ""
    with contextlib.suppress(httpx.HTTPError):
        metrics = httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).text
    faults.server.stop()
    summary = {
        "n": len(items), "clients": args.clients, "restarts": args.restarts, "kills": args.kills,
        "slow_clients": args.slow, "wall_s": round(wall, 1), "verdicts_per_hour": round(len(records) / wall * 3600),
        "lost": len(lost), "duplicated": len(duplicated), "judged_twice": len(judged_twice),
        "not_the_local_verdict": len(wrong), "client_errors": len(errors),
        "submit_ms": {"p50": percentile(submit_ms, 0.5), "p99": percentile(submit_ms, 0.99)},
        "poll_ms": {"p50": percentile(poll_ms, 0.5), "p99": percentile(poll_ms, 0.99)},
        "slow": {**fate, "health_status_while_held": health, "health_ms_while_held": round(answered_ms, 1)},
        "faults": faults.events, "examples": {"lost": lost[:10], "duplicated": duplicated[:10],
                                              "judged_twice": judged_twice[:10], "wrong": wrong[:5],
                                              "errors": dict(list(errors.items())[:5])},
        "metrics_lines": [line for line in metrics.splitlines() if line and not line.startswith("#")][:40],
    }  # fmt: skip
    (out / "service_faults.json").write_text(json.dumps(summary, indent=2, default=str))
    print(f"\n{'submissions':>12} {'wall s':>7} {'lost':>5} {'dup':>4} {'twice':>6} {'wrong':>6} {'errors':>7} "
          f"{'submit p50/p99 ms':>18} {'poll p50/p99 ms':>16}")  # fmt: skip
    fmt = lambda d: f"{d['p50'] or 0:.0f}/{d['p99'] or 0:.0f}"  # noqa: E731
    print(f"{len(items):>12} {wall:>7.0f} {len(lost):>5} {len(duplicated):>4} {len(judged_twice):>6} {len(wrong):>6} "
          f"{len(errors):>7} {fmt(summary['submit_ms']):>18} {fmt(summary['poll_ms']):>16}")  # fmt: skip
    print(f"faults: {', '.join(e['kind'] + ' (' + str(e['down_s']) + ' s down)' for e in faults.events)}")
    print(f"slow clients: {fate}; /v1/health while held: {health} in {answered_ms:.0f} ms")
    print(f"wrote {out / 'service_faults.json'}")
    return 0 if not (lost or duplicated or judged_twice or wrong or errors) else 1


if __name__ == "__main__":
    sys.exit(main())
