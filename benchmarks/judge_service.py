"""The judge over HTTP against the judge in-process, in one run: throughput, latency, same verdicts.

    python benchmarks/judge_service.py [--n 64] [--clients 8] [--aa-example elementwise_chain]
                                       [--aa-reps 5] [--build-only] [--out DIR]

On the same submissions (the bundled examples and the honest adversarial cases under tests/adversarial,
cycled to `--n`; each judged submission is a variant with a unique comment appended to its first .cu, so
one file recompiles, as when an agent edits a kernel):

  0. warm-up: every distinct submission judged once locally (baselines measured and cached, PCH built);
  1. idle A/A: `--aa-reps` variants of `--aa-example`, one at a time (candidate time at rest);
  2. local: `JudgeService.judge_many` over `--n` variants (builds in parallel, GPU stages serialised);
  3. service: `cuda-agent serve` in a subprocess on 127.0.0.1, `--clients` concurrent HTTP clients
     (threads, each submit -> long-poll wait) over another `--n` variants of the same submissions.

Prints verdicts/hour of both, the ratio (service / local: the HTTP front's overhead), p50/p99
submit-to-verdict latency through HTTP, per-submission status/reward agreement between the two runs, and
the A/A ratio (the A/A example's candidate time inside the loaded service run over its idle time).
Writes judge_service.json and verdicts.jsonl to `--out`. PASS/FAIL per target (throughput >= 90% of
local, identical statuses and rewards, every honest case ok, |A/A - 1| <= 0.02); exit 0 only if all pass.
`--build-only` runs the same comparison on the CPU checks (no GPU; no A/A, no rewards to compare).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

TARGET_THROUGHPUT = 0.90
TARGET_AA = 0.02


def percentile(values: list[float], q: float) -> float:
    data = sorted(values)
    if not data:
        return float("nan")
    k = (len(data) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def sources() -> list[tuple[str, Path, dict[str, Any]]]:
    """(name, folder, expected) for the bundled examples and the honest adversarial cases, minus the ones
    that take minutes by design (a build that hangs, a kernel that never ends)."""
    found = []
    slow_by_design = {"build_hang", "infinite_loop"}
    for folder in sorted((REPO / "examples").iterdir()):
        if (folder / "expected.json").is_file() and folder.name not in slow_by_design:
            found.append((folder.name, folder, json.loads((folder / "expected.json").read_text())))
    for folder in sorted((REPO / "tests" / "adversarial").glob("00_honest_*")):
        if (folder / "model_new.py").is_file():
            expected = json.loads((folder / "expected.json").read_text()) if (folder / "expected.json").is_file() else {}
            found.append((folder.name, folder, {"status": "ok", **expected}))
    return found


def variant(base: Path, into: Path, tag: str) -> Path:
    """A copy of `base` whose first .cu ends with a unique comment (one recompile, same behaviour)."""
    shutil.copytree(base, into, ignore=shutil.ignore_patterns("__pycache__", "expected.json", "README.md"))
    cus = sorted((into / "kernels").glob("*.cu")) if (into / "kernels").is_dir() else []
    if cus:
        with cus[0].open("a") as handle:
            handle.write(f"\n// variant {tag}\n")
    return into


def variants(pool: list[tuple[str, Path, dict]], n: int, root: Path, run: str) -> list[tuple[str, Path]]:
    return [(pool[i % len(pool)][0], variant(pool[i % len(pool)][1], root / f"{run}-{i:03d}", f"{run}-{i}"))
            for i in range(n)]  # fmt: skip


def judge_locally(items: list[tuple[str, Path]], config: Any, build_only: bool, workers: int
                  ) -> tuple[dict[int, Any], float]:  # fmt: skip
    start = time.monotonic()
    verdicts: dict[int, Any] = {}
    if build_only:
        from concurrent.futures import ThreadPoolExecutor

        from cuda_agent.judge.decide.cpu_checks import check_on_cpu

        with ThreadPoolExecutor(workers) as pool:
            for i, (verdict, _) in enumerate(pool.map(lambda it: check_on_cpu(it[1], None, config), items)):
                verdicts[i] = verdict
    else:
        from cuda_agent.judge.decide.service import JudgeService

        with JudgeService(config, keep_warm=True) as service:
            for index, verdict in service.judge_many([folder for _, folder in items]):
                verdicts[index] = verdict
                print(f"  local {len(verdicts)}/{len(items)} {items[index][0]}: {verdict.status.value}",
                      file=sys.stderr, flush=True)  # fmt: skip
    return verdicts, time.monotonic() - start


class Server:
    def __init__(self, root: Path, build_only: bool, workers: int, n: int) -> None:
        self.token = secrets.token_urlsafe(32)
        (root / "tokens").write_text(self.token + "\n")
        port_file = root / "port"
        command = [sys.executable, "-m", "cuda_agent.cli", "serve", "--port", "0", "--port-file", str(port_file),
                   "--token-file", str(root / "tokens"), "--data-dir", str(root / "data"),
                   "--max-pending", str(max(64, 2 * n))]  # fmt: skip
        if build_only:
            command += ["--build-only", "--workers", str(workers)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
        self.log = open(root / "server.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 300
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start: {(root / 'server.log').read_text()[-2000:]}")
            time.sleep(0.2)
        self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def judge_over_http(server: Server, items: list[tuple[str, Path]], clients: int
                    ) -> tuple[dict[int, dict], list[float], float]:  # fmt: skip
    from cuda_agent.service.client import RemoteJudge
    from cuda_agent.service.submission import from_folder

    records: dict[int, dict] = {}
    latencies: list[float] = []
    todo = list(range(len(items)))
    lock = threading.Lock()

    def client() -> None:
        with RemoteJudge(server.url, token=server.token, timeout_s=3600) as remote:
            while True:
                with lock:
                    if not todo:
                        return
                    index = todo.pop(0)
                began = time.monotonic()
                record = remote.wait(remote.submit(from_folder(items[index][1])))
                with lock:
                    latencies.append(time.monotonic() - began)
                    records[index] = record
                    print(f"  http {len(records)}/{len(items)} {items[index][0]}: {record['status']}",
                          file=sys.stderr, flush=True)  # fmt: skip

    start = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return records, latencies, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=64, help="judgments per run (default 64)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent HTTP clients (default 8)")
    parser.add_argument("--aa-example", default="elementwise_chain")
    parser.add_argument("--aa-reps", type=int, default=5)
    parser.add_argument("--build-only", action="store_true", help="CPU checks only (no GPU)")
    parser.add_argument("--workers", type=int, default=2, help="CPU workers with --build-only (2)")
    parser.add_argument("--sources", type=int, help="use only the first K distinct submissions (smoke runs)")
    parser.add_argument("--out", type=Path, default=Path("judge-service-bench"))
    args = parser.parse_args(argv)

    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.trusted.build import BuildConfig
    from cuda_agent.judge.trusted.toolchain import default_arch

    args.out.mkdir(parents=True, exist_ok=True)
    config = JudgeConfig(build=BuildConfig(arch=default_arch()))
    pool = sources()[: args.sources] if args.sources else sources()
    expected = {name: exp for name, _, exp in pool}
    with tempfile.TemporaryDirectory(prefix="judge-service-bench-") as tmp:
        root = Path(tmp)
        print(f"warm-up: {len(pool)} distinct submissions", file=sys.stderr, flush=True)
        judge_locally(variants(pool, len(pool), root, "warm"), config, args.build_only, args.workers)
        aa_idle: list[float] = []
        if not args.build_only:
            from cuda_agent.judge.decide.service import JudgeService

            base = next(folder for name, folder, _ in pool if name == args.aa_example)
            with JudgeService(config, keep_warm=True) as service:
                for k in range(args.aa_reps):
                    verdict = service.judge(variant(base, root / f"aa-{k}", f"aa-{k}"))
                    if verdict.timing:
                        aa_idle.append(verdict.timing.candidate_ms)
        local_items = variants(pool, args.n, root, "local")
        print(f"local judge_many: {args.n} judgments", file=sys.stderr, flush=True)
        local, local_s = judge_locally(local_items, config, args.build_only, args.workers)
        remote_items = variants(pool, args.n, root, "http")
        (root / "server").mkdir()
        server = Server(root / "server", args.build_only, args.workers, args.n)
        try:
            print(f"service: {args.n} judgments from {args.clients} clients at {server.url}", file=sys.stderr, flush=True)
            remote, latencies, remote_s = judge_over_http(server, remote_items, args.clients)
        finally:
            server.stop()
            shutil.copyfile(root / "server" / "server.log", args.out / "server.log")

    mismatches, not_ok = [], []
    aa_loaded: list[float] = []
    lines = []
    for i, (name, _) in enumerate(remote_items):
        mine, theirs = remote[i], local[i]
        lines.append(json.dumps({"submission": name, "http": mine, "local": json.loads(theirs.to_json())}, sort_keys=True))
        if (mine["status"], mine["reward"]) != (theirs.status.value, theirs.reward):
            mismatches.append(f"{name}: http {mine['status']} {mine['reward']}, local {theirs.status.value} {theirs.reward}")
        want = expected[name].get("status")
        if not args.build_only and want == "ok" and mine["status"] != "ok":
            not_ok.append(f"{name}: {mine['status']} ({mine['reason'][:120]})")
        timing = (mine.get("verdict") or {}).get("timing")
        if name == args.aa_example and timing:
            aa_loaded.append(timing["candidate_ms"])
    (args.out / "verdicts.jsonl").write_text("\n".join(lines) + "\n")

    local_rate, remote_rate = 3600 * args.n / local_s, 3600 * args.n / remote_s
    ratio = remote_rate / local_rate
    aa = statistics.median(aa_loaded) / statistics.median(aa_idle) if aa_loaded and aa_idle else float("nan")
    summary = {
        "n": args.n, "clients": args.clients, "build_only": args.build_only,
        "local_seconds": round(local_s, 2), "service_seconds": round(remote_s, 2),
        "local_per_hour": round(local_rate), "service_per_hour": round(remote_rate),
        "throughput_ratio": round(ratio, 4),
        "latency_p50_s": round(percentile(latencies, 0.5), 3), "latency_p99_s": round(percentile(latencies, 0.99), 3),
        "mismatches": mismatches, "honest_not_ok": not_ok,
        "aa_idle_ms": aa_idle, "aa_loaded_ms": aa_loaded, "aa_ratio": round(aa, 4) if aa == aa else None,
    }  # fmt: skip
    (args.out / "judge_service.json").write_text(json.dumps(summary, indent=2))
    print(f"\n{'path':<22}{'seconds':>9}{'verdicts/h':>12}{'p50 s':>8}{'p99 s':>8}")
    print(f"{'local judge_many':<22}{local_s:>9.1f}{local_rate:>12.0f}{'':>8}{'':>8}")
    print(f"{f'HTTP, {args.clients} clients':<22}{remote_s:>9.1f}{remote_rate:>12.0f}"
          f"{summary['latency_p50_s']:>8.2f}{summary['latency_p99_s']:>8.2f}")  # fmt: skip
    print(f"\nthroughput service / local: {ratio:.3f}")
    print(f"status/reward mismatches: {len(mismatches)}" + "".join(f"\n  {m}" for m in mismatches))
    checks = [("throughput >= 90% of local", ratio >= TARGET_THROUGHPUT),
              ("statuses and rewards identical", not mismatches)]  # fmt: skip
    if not args.build_only:
        print(f"honest cases not ok: {len(not_ok)}" + "".join(f"\n  {m}" for m in not_ok))
        print(f"A/A (loaded service / idle): {aa:.4f} from {len(aa_loaded)} loaded, {len(aa_idle)} idle")
        checks += [("every honest case ok", not not_ok), ("|A/A - 1| <= 0.02", abs(aa - 1) <= TARGET_AA)]
    for what, passed in checks:
        print(f"{'PASS' if passed else 'FAIL'}  {what}")
    return 0 if all(p for _, p in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
