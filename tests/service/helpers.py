"""Starting a real judge server (a subprocess on an ephemeral port) and the submissions the tests send.

Submissions are chosen so their verdicts are reached without compiling: `instant()` has a broken task
(task_error at once), `slow()` a valid task and no kernels, so the CPU checks run the task probe (a few
seconds) and then fail the build (compile_error)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from cuda_agent.service.launch import ServerProcess

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


class Server(ServerProcess):
    """`cuda-agent serve` (`--build-only` unless `gpu`) in a subprocess, with an authenticated client;
    `kill()` sends SIGKILL."""

    def __init__(self, data_dir: Path, *extra: str, gpu: bool = False, cache: Path | None = None) -> None:
        """`cache`: the judge cache root to build in (default: one of its own under `data_dir`)."""
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        tokens = data_dir / "tokens"
        tokens.write_text(f"# test tokens\n{TOKEN}\n")
        super().__init__(
            data_dir,
            ["--token-file", str(tokens), "--data-dir", str(data_dir / "data"),
             *(() if gpu else ("--build-only", "--arch", "9.0")), *extra],
            env={"CUDA_AGENT_CACHE": str(cache or data_dir / "cache"), "PYTHONUNBUFFERED": "1"},
            ready="/v1/health", timeout_s=300 if gpu else 90, cwd=data_dir,
        )  # fmt: skip
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
        super().kill()
        self.http.close()

    def stop(self, grace_s: float = 15.0) -> None:
        super().stop(grace_s)
        if hasattr(self, "http"):
            self.http.close()
