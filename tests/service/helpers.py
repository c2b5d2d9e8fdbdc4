"""Starting a real judge server (a subprocess on an ephemeral port) and the submissions the tests send.

Submissions are chosen so their verdicts are reached without compiling: `instant()` has a broken task
(task_error at once), `slow()` a valid task and no kernels, so the CPU checks run the task probe (a few
seconds) and then fail the build (compile_error)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "test-token-" + "x" * 24
TASK = (ROOT / "examples" / "elementwise_chain" / "model.py").read_text()
MODEL_NEW = (ROOT / "examples" / "elementwise_chain" / "model_new.py").read_text()


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def instant(n: int) -> dict:
    return {"files": {"model_new.py": f"# instant {n}\n"}, "task": f"this is not python {n} (", "task_name": f"instant{n}"}


def slow(n: int = 0) -> dict:
    return {"files": {"model_new.py": MODEL_NEW + f"\n# slow {n}\n"}, "task": TASK, "task_name": "elementwise_chain"}


class Server:
    """`cuda-agent serve` (`--build-only` unless `gpu`) in a subprocess; `kill()` sends SIGKILL."""

    def __init__(self, data_dir: Path, *extra: str, gpu: bool = False) -> None:
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        tokens = data_dir / "tokens"
        tokens.write_text(f"# test tokens\n{TOKEN}\n")
        port_file = data_dir / "port"
        port_file.unlink(missing_ok=True)
        env = {**os.environ, "CUDA_AGENT_CACHE": str(data_dir / "cache"), "PYTHONUNBUFFERED": "1"}
        self.log = open(data_dir / "server.log", "a")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cuda_agent.cli", "serve", "--port", "0",
             "--port-file", str(port_file), "--token-file", str(tokens), "--data-dir", str(data_dir / "data"),
             *(() if gpu else ("--build-only", "--arch", "9.0")), *extra],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=data_dir,
        )  # fmt: skip
        deadline = time.monotonic() + (300 if gpu else 90)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited {self.proc.returncode}: {self.read_log()[-2000:]}")
            if port_file.exists() and port_file.read_text().strip():
                self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"
                try:
                    if httpx.get(self.url + "/v1/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("server did not start in time")
            time.sleep(0.2)
        self.http = httpx.Client(base_url=self.url + "/v1", headers=auth(), timeout=60)

    def read_log(self) -> str:
        return (self.data_dir / "server.log").read_text(errors="replace")

    def wait_done(self, judgment_id: str, timeout: float = 120) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            record = self.http.get(f"/judgments/{judgment_id}", params={"wait": 20}).json()
            if record["state"] == "done":
                return record
        raise AssertionError(f"no verdict for {judgment_id} within {timeout} s")

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.http.close()
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if hasattr(self, "http"):
            self.http.close()
        self.log.close()
