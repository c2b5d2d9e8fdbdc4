"""Outputs through sealed shared memory (judge/shared_outputs.py), between two real processes: exact
round trips through the two alternating buffers, and buffers a hostile writer could shrink, or files that
are not buffers at all, refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from cuda_agent.judge.common.shared_outputs import SharedOutputReader, UnsafeBuffer
from cuda_agent.judge.common.tensorfile import TensorFileError

LIMIT = 64 << 20

# A writer process: reads one JSON command per line, answers with one line.
WRITER = textwrap.dedent("""
    import fcntl, json, mmap, os, sys
    import torch
    from cuda_agent.judge.common.shared_outputs import OutputBuffers
    from cuda_agent.judge.common import tensorfile
    buffers = OutputBuffers()
    keep = []
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "write":
            torch.manual_seed(cmd["seed"])
            x = torch.randn(257, 33)
            out = [x, x.t(), torch.arange(10, dtype=torch.int64), (torch.ones(3, dtype=torch.bool),)]
            print(json.dumps({"path": buffers.write(out)}), flush=True)
        elif cmd["op"] == "unsealed":
            fd = os.memfd_create("plain", os.MFD_ALLOW_SEALING)
            layout = tensorfile.plan([torch.zeros(4)])
            os.ftruncate(fd, layout.size)
            view = mmap.mmap(fd, layout.size)
            tensorfile.write_into(layout, view)
            keep.append((fd, view))
            print(json.dumps({"path": f"/proc/{os.getpid()}/fd/{fd}"}), flush=True)
        elif cmd["op"] == "lying":
            layout = tensorfile.plan([torch.zeros(4)])
            path = buffers.write([torch.zeros(4)])
            buffer = buffers.buffers[buffers.turn ^ 1]
            header = layout.header.replace(b'"size": [4]', b'"size": [9]')
            buffer.view[: len(header)] = header
            print(json.dumps({"path": path}), flush=True)
        elif cmd["op"] == "huge":
            try:
                fd = os.memfd_create("huge", os.MFD_HUGETLB | os.MFD_ALLOW_SEALING)
                os.ftruncate(fd, 2 << 20)
                fcntl.fcntl(fd, 1033, 2 | 4)  # F_ADD_SEALS: shrink, grow
            except OSError:
                print(json.dumps({"path": None}), flush=True)
                continue
            keep.append(fd)
            print(json.dumps({"path": f"/proc/{os.getpid()}/fd/{fd}"}), flush=True)
        elif cmd["op"] == "file":
            with open(cmd["name"], "wb") as handle:
                handle.write(b"x" * 4096)
            fd = os.open(cmd["name"], os.O_RDONLY)
            keep.append(fd)
            print(json.dumps({"path": f"/proc/{os.getpid()}/fd/{fd}"}), flush=True)
""")


@contextmanager
def writer() -> Iterator:
    proc = subprocess.Popen([sys.executable, "-c", WRITER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})  # fmt: skip

    def ask(**cmd: object) -> str:
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps(cmd) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line, "the writer process died"
        return json.loads(line)["path"]  # type: ignore[no-any-return]

    try:
        yield ask
    finally:
        proc.kill()
        proc.wait()


def expected(seed: int) -> list:
    torch.manual_seed(seed)
    x = torch.randn(257, 33)
    return [x, x.t(), torch.arange(10, dtype=torch.int64), (torch.ones(3, dtype=torch.bool),)]


def test_outputs_round_trip_exactly_through_two_alternating_buffers() -> None:
    reader = SharedOutputReader()
    with writer() as ask:
        paths = [ask(op="write", seed=seed) for seed in (1, 2, 3)]
        assert paths[0] != paths[1] and paths[2] == paths[0]  # two buffers, used in turn
        got = reader.load(paths[2], LIMIT, device="cpu")  # buffer 0 now holds the third output
        want = expected(3)
        assert torch.equal(got[0], want[0])
        assert got[1].stride() == want[1].stride() and torch.equal(got[1], want[1])
        assert torch.equal(got[2], want[2]) and torch.equal(got[3][0], want[3][0])
        assert torch.equal(reader.load(paths[1], LIMIT, device="cpu")[0], expected(2)[0])
        assert len(reader.mapped) == 2  # mapped once per buffer, then reused
        ask(op="write", seed=4)
        assert torch.equal(reader.load(paths[1], LIMIT, device="cpu")[0], expected(4)[0])  # same buffer, new bytes
        assert len(reader.mapped) == 2
    reader.close()
    assert reader.mapped == {}


def test_a_buffer_not_sealed_against_shrinking_is_refused() -> None:
    with writer() as ask:
        path = ask(op="unsealed")
        with pytest.raises(UnsafeBuffer, match="not sealed"):
            SharedOutputReader().load(path, LIMIT, device="cpu")


def test_a_plain_file_is_not_a_buffer(tmp_path) -> None:
    with writer() as ask:
        path = ask(op="file", name=str(tmp_path / "plain.bin"))
        with pytest.raises(UnsafeBuffer):
            SharedOutputReader().load(path, LIMIT, device="cpu")


def test_a_fifo_behind_the_buffer_path_is_refused_at_once(tmp_path) -> None:
    """A candidate worker names the buffer it handed over by a path of its own fds (/proc/<pid>/fd/N); one
    that opened a FIFO there got the reference's plain open to block until its call's limit, a reference
    failure (task_error) instead of its own wrong output. The open no longer blocks, and a FIFO is refused."""
    import threading

    fifo = tmp_path / "buffer"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the candidate keeps it open, as a buffer would be
    outcome: list[BaseException | object] = []

    def read() -> None:
        try:
            outcome.append(SharedOutputReader().load(f"/proc/self/fd/{held}", LIMIT, device="cpu"))
        except BaseException as exc:  # the outcome, whatever it is, is what the test looks at
            outcome.append(exc)

    try:
        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        thread.join(5.0)
    finally:
        os.close(held)
    assert outcome, "the reference's open blocked on a FIFO"
    assert isinstance(outcome[0], UnsafeBuffer) and "not a regular file" in str(outcome[0])


def test_a_header_describing_more_than_the_buffer_is_refused() -> None:
    with writer() as ask:
        path = ask(op="lying")
        with pytest.raises(TensorFileError, match="outside its data"):
            SharedOutputReader().load(path, LIMIT, device="cpu")


def test_a_buffer_larger_than_the_outputs_need_is_refused() -> None:
    with writer() as ask:
        path = ask(op="write", seed=1)
        with pytest.raises(UnsafeBuffer, match="more than"):
            SharedOutputReader().load(path, 1 << 20, device="cpu")


def test_a_huge_page_buffer_is_refused() -> None:
    """Sealed, but on huge pages: a read that faults when none are free raises SIGBUS in the reader."""
    with writer() as ask:
        path = ask(op="huge")
        if path is None:
            pytest.skip("this kernel offers no sealable huge-page memfd")
        with pytest.raises(UnsafeBuffer, match="huge pages"):
            SharedOutputReader().load(path, LIMIT, device="cpu")
