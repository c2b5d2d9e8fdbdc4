"""The judge server over real sockets: auth, size limits, every unsafe archive, idempotency, 429 under a
full queue with flat memory, the client, and a SIGKILL mid-queue followed by a restart."""

from __future__ import annotations

import io
import json
import sqlite3
import tarfile
import threading
import time
from pathlib import Path

import httpx
import pytest

from cuda_agent.service.client import RemoteJudge
from cuda_agent.task import Task
from tests.service.helpers import MODEL_NEW, TASK, TOKEN, Server, auth, instant, slow

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    srv = Server(tmp_path_factory.mktemp("judge-server"), "--max-pending", "3", "--max-request-mb", "1")
    yield srv
    srv.stop()


def test_auth_missing_wrong_and_right_token(server: Server) -> None:
    assert httpx.get(server.url + "/v1/health").status_code == 200  # health stays open
    body = instant(0)
    missing = httpx.post(server.url + "/v1/judgments", json=body)
    wrong = httpx.post(server.url + "/v1/judgments", json=body, headers=auth("not-the-token-" + "y" * 20))
    not_bearer = httpx.post(server.url + "/v1/judgments", json=body, headers={"Authorization": f"Basic {TOKEN}"})
    for response in (missing, wrong, not_bearer):
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert httpx.get(server.url + "/metrics").status_code == 401
    assert httpx.get(server.url + "/v1/judgments/abc", headers=auth()).status_code == 404  # authenticated
    metrics = httpx.get(server.url + "/metrics", headers=auth()).text
    assert 'cuda_agent_judge_refused_total{reason="auth"} 4.0' in metrics
    assert TOKEN not in server.read_log()


def test_request_size_limit(server: Server) -> None:
    big = {"files": {"model_new.py": "#" * (1 << 20)}, "task": TASK}
    response = server.http.post("/judgments", json=big)
    assert response.status_code == 413 and "1 MiB" in response.json()["error"]
    chunked = server.http.post("/judgments", content=iter([b"x" * (600 << 10)] * 2),
                               headers={"Content-Type": "application/x-tar"})  # fmt: skip
    assert chunked.status_code == 413  # no Content-Length: counted while reading


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _special(name: str, kind: bytes, link: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, None


BASE = [_file("model.py", TASK.encode()), _file("model_new.py", MODEL_NEW.encode())]
UNSAFE = {
    "absolute path": ([*BASE, _file("/etc/cron.d/evil")], 400, "absolute"),
    "dot-dot": ([*BASE, _file("kernels/../../evil.cu")], 400, ".."),
    "symlink": ([*BASE, _special("kernels/k.cu", tarfile.SYMTYPE, "/etc/passwd")], 400, "link"),
    "hard link": ([*BASE, _special("kernels/k.cu", tarfile.LNKTYPE, "model.py")], 400, "link"),
    "character device": ([*BASE, _special("kernels/tty", tarfile.CHRTYPE)], 400, "device"),
    "block device": ([*BASE, _special("kernels/sda", tarfile.BLKTYPE)], 400, "device"),
    "fifo": ([*BASE, _special("kernels/pipe", tarfile.FIFOTYPE)], 400, "fifo"),
    "too many files": (BASE + [_file(f"kernels/k{i}.cuh") for i in range(70)], 413, "files"),
    "file too large": ([*BASE, _file("kernels/big.cu", b"\x00" * (5 << 20))], 413, "larger than 4 mib"),
    "duplicate path": ([*BASE, _file("kernels/a.cu"), _file("kernels/./a.cu")], 400, "twice"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_unsafe_archives_are_refused_whole(server: Server, case: str) -> None:
    members, status, words = UNSAFE[case]
    mode = "w:gz" if case == "file too large" else "w"  # compressed under the request limit
    response = server.http.post("/judgments", content=_tar(members, mode), headers={"Content-Type": "application/gzip"})
    assert response.status_code == status, response.text
    assert words in response.json()["error"].lower()


def test_gzip_bomb_stops_at_the_unpacked_budget(server: Server) -> None:
    members = BASE + [_file(f"kernels/pad{i}.h", b"\0" * (3 << 20)) for i in range(8)]  # 24 MiB > 16 MiB
    data = _tar(members, "w:gz")
    assert len(data) < (1 << 20)
    response = server.http.post("/judgments", content=data, headers={"Content-Type": "application/gzip"})
    assert response.status_code == 413 and "mib" in response.json()["error"].lower()


def test_a_safe_archive_is_accepted_and_unrelated_files_ignored(server: Server) -> None:
    members = [_file("./model.py", b"broken ("), _file("model_new.py", b"x = 1\n"), _file("utils/compile.sh", b"")]
    response = server.http.post("/judgments", content=_tar(members), headers={"Content-Type": "application/x-tar"})
    assert response.status_code == 202, response.text
    assert response.json()["ignored"] == ["utils/compile.sh"]
    record = server.wait_done(response.json()["id"])
    assert record["status"] == "task_error" and record["reward"] == -1 and record["attempts"] == 1


def test_idempotency_429_and_flat_memory_under_a_full_queue(server: Server) -> None:
    # One slow judgment holds the single CPU worker; two instant ones wait behind it: the queue (3) is full.
    first = server.http.post("/judgments", json=slow(1), headers={"Idempotency-Key": "job-1"})
    assert first.status_code == 202 and first.json()["created"]
    again = server.http.post("/judgments", json=slow(1), headers={"Idempotency-Key": "job-1"})
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"] and not again.json()["created"]
    conflict = server.http.post("/judgments", json=slow(2), headers={"Idempotency-Key": "job-1"})
    assert conflict.status_code == 409
    waiting = [server.http.post("/judgments", json=instant(n)) for n in (1, 2)]
    assert [r.status_code for r in waiting] == [202, 202]
    full = server.http.post("/judgments", json=instant(3))
    assert full.status_code == 429 and int(full.headers["retry-after"]) >= 1
    assert server.http.post("/judgments", json=slow(1), headers={"Idempotency-Key": "job-1"}).status_code == 200
    assert httpx.get(server.url + "/v1/ready").status_code == 503

    before = server.rss_kib()
    statuses: list[int] = []

    def hammer() -> None:
        with httpx.Client(base_url=server.url + "/v1", headers=auth(), timeout=30) as http:
            for n in range(40):
                statuses.append(http.post("/judgments", json=instant(100 + n)).status_code)

    threads = [threading.Thread(target=hammer) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    growth = server.rss_kib() - before
    assert statuses.count(429) == len(statuses) == 240  # refused, not queued: the slow one still runs
    assert growth < 20 * 1024, f"server memory grew {growth} KiB under a full queue"

    with server.http.stream("GET", f"/judgments/{first.json()['id']}/events") as events:  # server-sent events
        lines = [line for line in events.iter_lines() if line.startswith(("event:", "data:"))]
    assert lines[0] == "event: state" and lines[-2] == "event: verdict"
    verdict = json.loads(lines[-1].removeprefix("data: "))
    assert verdict["status"] == "compile_error" and "kernels" in verdict["reason"]
    assert verdict["verdict"]["stages"]["task"] == "passed"  # the task probe ran: a real CPU check
    for response in waiting:
        assert server.wait_done(response.json()["id"])["status"] == "task_error"


def test_remote_judge_loses_no_verdict_under_load(server: Server, tmp_path: Path) -> None:
    """Bounded loopback load through the client: 24 submissions from 8 threads into a queue of 3 (429s
    retried after Retry-After); every one comes back with its own verdict."""
    folders = []
    for n in range(24):
        folder = tmp_path / f"sub{n}"
        folder.mkdir()
        (folder / "model_new.py").write_text(f"# {n}\n")
        (folder / "model.py").write_text(f"broken {n} (")
        folders.append(folder)
    start = time.monotonic()
    with RemoteJudge(server.url, token=TOKEN, concurrency=8, retries=60, timeout_s=120) as judge:
        seen = dict(judge.judge_many(folders))
        outcome = judge(folders[0], Task(name="given", source="x = 1\n"))  # the Judge seam
    assert sorted(seen) == list(range(24)) and time.monotonic() - start < 100
    assert {v.status.value for v in seen.values()} == {"task_error"}
    assert outcome.status == "task_error" and outcome.reward == -1
    assert "missing Model" in outcome.reason  # the task given was judged, not the folder's own (a syntax error)
    with pytest.raises(Exception, match="no token"):
        RemoteJudge(server.url, token="")


def test_sigkill_mid_queue_then_restart_every_judgment_has_one_verdict(tmp_path: Path) -> None:
    srv = Server(tmp_path / "kill", "--max-pending", "16")
    try:
        done_before = srv.http.post("/judgments", json=instant(0)).json()["id"]
        finished_at = srv.wait_done(done_before)["finished"]
        ids = [srv.http.post("/judgments", json=slow(1)).json()["id"]]
        ids += [srv.http.post("/judgments", json=instant(n)).json()["id"] for n in range(1, 5)]
        states = [srv.http.get(f"/judgments/{i}").json()["state"] for i in ids]
        assert "done" not in states[1:]  # queued behind the slow one
    finally:
        srv.kill()
    srv = Server(tmp_path / "kill", "--max-pending", "16")
    try:
        records = [srv.wait_done(i) for i in ids]
        assert [r["status"] for r in records] == ["compile_error"] + ["task_error"] * 4
        # the slow one was running when the process died (one attempt), then ran again; the others had
        # never started, so their one run after the restart is their first attempt
        assert [r["attempts"] for r in records] == [2, 1, 1, 1, 1]
        kept = srv.http.get(f"/judgments/{done_before}").json()
        assert kept["attempts"] == 1 and kept["finished"] == finished_at  # served, not judged again
        assert "resumed 5 unfinished" in srv.read_log()
    finally:
        srv.stop()
    db = sqlite3.connect(tmp_path / "kill" / "data" / "judgments.sqlite")
    rows = db.execute("SELECT state, COUNT(*), COUNT(result) FROM judgments GROUP BY state").fetchall()
    assert rows == [("done", 6, 6)]


def test_solve_judge_url_switches_to_the_remote_judge(server: Server, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:  # fmt: skip
    from cuda_agent.cli import build_parser
    from cuda_agent.commands import solve

    task_file = tmp_path / "model.py"
    task_file.write_text(TASK)
    argv = ["solve", str(task_file), "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--judge-url", server.url]
    monkeypatch.delenv("CUDA_AGENT_JUDGE_TOKEN", raising=False)
    assert solve.run(build_parser().parse_args(argv)) == 2
    assert "CUDA_AGENT_JUDGE_TOKEN" in capsys.readouterr().err
    monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN", TOKEN)
    runner = solve.Runner(build_parser().parse_args(argv), None, [])
    assert isinstance(runner.judge, RemoteJudge) and runner.judge.url == server.url + "/v1"


def test_batch_is_all_or_nothing(server: Server) -> None:
    too_many = server.http.post("/batches", json={"submissions": [instant(200 + n) for n in range(4)]})
    assert too_many.status_code == 429 and "retry-after" in too_many.headers  # 4 > a queue of 3
    keyed = [{**instant(300 + n), "idempotency_key": f"batch-{n}"} for n in range(2)]
    bad = server.http.post("/batches", json={"submissions": [*keyed, {"files": {"/abs": "x"}, "task": "t"}]})
    assert bad.status_code == 400 and "submissions[2]" in bad.json()["error"]
    done = server.http.post("/batches", json={"submissions": keyed})
    assert done.status_code == 202
    ids = [j["id"] for j in done.json()["judgments"]]
    assert len(set(ids)) == 2 and all(server.wait_done(i)["status"] == "task_error" for i in ids)
    again = server.http.post("/batches", json={"submissions": keyed}).json()["judgments"]
    assert [j["id"] for j in again] == ids and not any(j["created"] for j in again)


def test_a_server_that_cannot_start_says_why(tmp_path) -> None:
    """ServerProcess (what the benchmark and these tests start servers with) fails with the server's
    own message, and leaves no process behind."""
    from cuda_agent.service.launch import ServerProcess, ServerStartError

    with pytest.raises(ServerStartError, match="exited") as failed:
        ServerProcess(tmp_path / "bad", ["--no-such-option"], timeout_s=60)
    assert "no-such-option" in str(failed.value)
