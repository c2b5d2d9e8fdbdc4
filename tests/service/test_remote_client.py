"""`RemoteJudge` against a real judge server and against a real misbehaving one: the same verdict as the
local judge for a submission the server refuses, bytes sent unaltered, a bounded typed error for an answer
that is not this API's, and Retry-After capped."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from cuda_agent.agent.judging import JUDGE_ERROR
from cuda_agent.judge import BuildConfig, JudgeConfig, check_on_cpu
from cuda_agent.service.client import RemoteJudge, RemoteJudgeError, RemoteProtocolError
from cuda_agent.service.submission import from_folder
from cuda_agent.task import Task
from tests.service.helpers import MODEL_NEW, TASK, TOKEN, Server

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    srv = Server(tmp_path_factory.mktemp("remote-client"), "--max-pending", "8", "--max-request-mb", "1")
    yield srv
    srv.stop()


def _folder(root: Path, kernels: dict[str, bytes]) -> Path:
    root.mkdir(parents=True)
    (root / "model_new.py").write_text(MODEL_NEW)
    (root / "kernels").mkdir()
    for name, data in kernels.items():
        (root / "kernels" / name).write_bytes(data)
    return root


REFUSED = {
    # over the server's request limit (1 MiB here) and over the build's own 4 MiB per kernel file
    "file too large": {"big.cu": b"// " + b"x" * (5 << 20) + b"\n"},
    # 70 kernel files: the server's 66 judged files, the build's 64
    "too many files": {f"k{i}.cuh": b"// header\n" for i in range(70)},
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_submission_gets_the_local_judges_verdict(
    server: Server, tmp_path: Path, case: str
) -> None:
    folder = _folder(tmp_path / "ws", REFUSED[case])
    task = Task(name="elementwise_chain", source=TASK)
    local, _ = check_on_cpu(folder, task, JudgeConfig(build=BuildConfig(arch="9.0")))
    with RemoteJudge(server.url, token=TOKEN, retries=1, timeout_s=60) as judge:
        verdict = judge.judge(folder, task)
        outcome = judge(folder, task)
    assert (
        (verdict.status, verdict.reward) == (local.status, local.reward) == (local.status.COMPILE_ERROR, -1)
    )
    assert outcome.status == "compile_error" and outcome.reward == -1
    assert "refused the submission" in outcome.reason and (
        "MiB" in outcome.reason or "files" in outcome.reason
    )


def test_bytes_that_are_not_utf8_arrive_unaltered(server: Server, tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ws", {"k.cu": b"// caf\xe9 \xff\xfe\n__global__ void k() {}\n"})
    task = Task(name="broken", source="not python (")  # judged at once (task_error): only the bytes matter
    submission = from_folder(folder, task)
    with RemoteJudge(server.url, token=TOKEN, retries=1, timeout_s=60) as judge:
        judgment_id = judge.submit(submission)
    db = sqlite3.connect(f"file:{server.data_dir / 'data' / 'judgments.sqlite'}?mode=ro", uri=True)
    try:
        [(digest,)] = db.execute("SELECT digest FROM judgments WHERE id = ?", (judgment_id,)).fetchall()
    finally:
        db.close()
    assert digest == submission.digest()  # the server holds the very bytes of the folder
    assert server.wait_done(judgment_id)["status"] == "task_error"


# ---- a misbehaving server ----------------------------------------------------------------------------
DONE = {"id": "j1", "state": "done"}
ANSWERS: dict[str, tuple[tuple[int, bytes], tuple[int, bytes]]] = {  # case -> (POST answer, GET answer)
    "not json": ((200, b"<html>oops</html>"), (200, b"")),
    "a json list": ((202, b"[1, 2]"), (200, b"")),
    "no id": ((202, b'{"id": 5}'), (200, b"")),
    "huge": ((202, b'{"id": "' + b"a" * (17 << 20) + b'"}'), (200, b"")),
    "no state": ((202, b'{"id": "j1"}'), (200, b'{"id": "j1"}')),
    "bad outcome": ((202, b'{"id": "j1"}'), (200, json.dumps({**DONE, "status": 5}).encode())),
    "bad verdict": ((202, b'{"id": "j1"}'), (200, json.dumps({**DONE, "status": "ok", "reward": 1, "reason": "",
                                                                 "verdict": {"status": "nonsense"}}).encode())),
}  # fmt: skip


class _Scripted(BaseHTTPRequestHandler):
    answers: ClassVar[dict[str, tuple[int, bytes, dict[str, str]]]] = {}
    hits: ClassVar[list[str]] = []

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.hits.append(method)
        status, body, headers = self.answers[method]
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self._answer("POST")

    def do_GET(self) -> None:
        self._answer("GET")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("case", sorted(ANSWERS))
def test_a_malformed_answer_is_a_bounded_typed_error(
    scripted: ThreadingHTTPServer, tmp_path: Path, case: str
) -> None:
    (post_status, post_body), (get_status, get_body) = ANSWERS[case]
    _Scripted.answers = {"POST": (post_status, post_body, {}), "GET": (get_status, get_body, {})}
    folder = _folder(tmp_path / "ws", {"k.cu": b"__global__ void k() {}\n"})
    task = Task(name="t", source=TASK)
    with RemoteJudge(
        f"http://127.0.0.1:{scripted.server_port}", token=TOKEN, retries=0, timeout_s=10
    ) as judge:
        with pytest.raises(RemoteProtocolError) as raised:
            judge.judge(folder, task)
        outcome = judge(folder, task)
    assert len(str(raised.value)) < 1000
    assert outcome.status == JUDGE_ERROR and outcome.reward is None and len(outcome.reason) < 1000


def test_retry_after_is_capped(scripted: ThreadingHTTPServer, tmp_path: Path) -> None:
    _Scripted.answers = {"POST": (429, b'{"error": "full"}', {"Retry-After": "3600"}), "GET": (200, b"", {})}
    _Scripted.hits = []
    folder = _folder(tmp_path / "ws", {"k.cu": b"__global__ void k() {}\n"})
    url = f"http://127.0.0.1:{scripted.server_port}"
    errors: list[BaseException] = []

    def call() -> None:
        try:
            with RemoteJudge(url, token=TOKEN, retries=2, max_retry_after_s=0.5) as judge:
                judge.judge(folder, Task(name="t", source=TASK))
        except BaseException as exc:
            errors.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "the client slept what Retry-After asked (an hour)"
    assert time.monotonic() - start < 10 and _Scripted.hits == ["POST"] * 3
    assert len(errors) == 1 and isinstance(errors[0], RemoteJudgeError) and "429" in str(errors[0])
