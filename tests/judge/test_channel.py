"""The judge's channel to its workers (common/channel.py) over its real reply socket: the host clock is the
kernel's stamp on the reply, not the moment the parent got round to reading it, and a worker cannot push
descriptors or oversized messages into the parent. Workers here are small Python processes started through
`WorkerHandle` itself (a stand-in interpreter runs them in place of the judge's worker modules)."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

from cuda_agent.judge.common.channel import REPLY_CHUNK_BYTES, WorkerFailure, WorkerHandle, package_root
from cuda_agent.judge.common.procs import scrubbed_env

# A worker that answers through the judge's own `serve`: `echo` returns its arguments, `big` n bytes.
SERVING = f"""
import sys
sys.path.insert(0, {package_root()!r})
from cuda_agent.judge.common.channel import serve
sys.argv = [sys.argv[0], sys.argv[-1]]
serve({{"echo": lambda **kw: kw, "big": lambda n: {{"data": "x" * n}}, "exit": lambda: {{}}}})
"""

# A hostile worker: it answers the first command with a forged reply that also passes one of its open
# descriptors (SCM_RIGHTS), with one message larger than any piece of a real reply, or with an empty one.
HOSTILE = """
import json, os, socket, sys
end = socket.socket(fileno=int(sys.argv[-1]))
request = json.loads(sys.stdin.readline())
reply = (json.dumps({"ok": True, "id": request["id"], "pad": "y" * (200000 if sys.argv[1] == "big" else 0)}) + "\\n").encode()
if sys.argv[1] == "empty":
    end.send(b"")  # on a SOCK_SEQPACKET socket: a message of no bytes, which reads like the end
elif sys.argv[1] == "fds":
    end.sendmsg([reply], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(__import__("array").array("i", [0, 1, 2]))))])
else:
    end.send(reply)
sys.stdin.readline()
"""


def _worker(tmp_path: Path, code: str, *args: str) -> WorkerHandle:
    """A WorkerHandle whose 'interpreter' runs `code` with `args` and the reply descriptor last."""
    script = tmp_path / "worker.py"
    script.write_text(code)
    shim = tmp_path / "python"
    # WorkerHandle runs [python, -I, -c, bootstrap, reply_fd]: keep the descriptor, run our script.
    shim.write_text(f'#!/bin/sh\nfor last; do :; done\nexec {sys.executable} {script} {" ".join(args)} "$last"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return WorkerHandle("unused", log_path=tmp_path / "w.log", env=scrubbed_env(), cwd=tmp_path, python=str(shim))


def test_a_round_trip_ends_at_the_kernels_stamp_on_the_reply_not_when_the_parent_read_it(tmp_path: Path) -> None:
    with _worker(tmp_path, SERVING) as worker:
        assert worker.call("echo", 60, value=0) == {"ok": True, "value": 0}  # started (its start-up counts)
        assert worker.call("echo", 60, value=1) == {"ok": True, "value": 1} and worker.last_reply_stamped
        quick = worker.last_round_trip_ms
        request = worker.send("echo", value=2)
        time.sleep(0.3)  # the parent is busy elsewhere (another thread holds the GIL, say)
        began = time.perf_counter()
        assert worker.receive("echo", request, 60)["value"] == 2
        assert (time.perf_counter() - began) < 0.1  # the reply was there all along
        late = worker.last_round_trip_ms
        assert worker.last_reply_stamped
        assert 0 <= quick < 100 and 0 <= late < 100, (quick, late)  # not the 300 ms the parent took


def test_a_reply_larger_than_one_message_arrives_whole(tmp_path: Path) -> None:
    with _worker(tmp_path, SERVING) as worker:
        n = 40 * REPLY_CHUNK_BYTES + 123
        assert len(worker.call("big", 60, n=n)["data"]) == n
        assert worker.call("echo", 60, after=True)["after"] is True  # nothing left over between replies


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_descriptors_passed_by_a_worker_are_closed_and_refused(tmp_path: Path) -> None:
    before = _open_descriptors()
    with _worker(tmp_path, HOSTILE, "fds") as worker, pytest.raises(WorkerFailure, match="descriptors") as failure:
        worker.call("echo", 60)
    assert failure.value.kind == "protocol"
    assert _open_descriptors() <= before  # none of the three it passed is left open in the judge


def test_a_message_larger_than_a_reply_piece_is_refused(tmp_path: Path) -> None:
    with _worker(tmp_path, HOSTILE, "big") as worker, pytest.raises(WorkerFailure, match="oversized") as failure:
        worker.call("echo", 60)
    assert failure.value.kind == "protocol"


def test_a_live_worker_that_ends_its_reply_channel_breaks_the_protocol(tmp_path: Path) -> None:
    with _worker(tmp_path, HOSTILE, "empty") as worker, pytest.raises(WorkerFailure, match="closed its reply") as failure:
        worker.call("echo", 60)
    assert failure.value.kind == "protocol"
    assert worker.process.poll() is not None  # and it is gone
