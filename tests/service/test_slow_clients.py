"""Slow clients over real sockets: connections that send their headers a byte at a time (slowloris) or
trickle a body are closed within the configured bounds, and an authenticated request is answered at once
while they hang around."""

from __future__ import annotations

import select
import socket
import threading
import time

import pytest

from tests.service.helpers import Server, instant

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SLOW = 50
HEAD = b"POST /v1/judgments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 4000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    srv = Server(tmp_path_factory.mktemp("slow"), "--header-timeout-s", "3", "--body-timeout-s", "2",
                 "--max-half-open", "20", "--max-pending", "8")  # fmt: skip
    yield srv
    srv.stop()


def _closed_by_peer(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(65536) == b""
    except OSError:  # reset
        return True


class Trickle:
    """`count` sockets sending HEAD one byte at a time, round robin, until stopped."""

    def __init__(self, url: str, count: int) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.socks = [socket.create_connection((host, int(port)), timeout=5) for _ in range(count)]
        self.closed: set[int] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        offset = 0
        while not self.stop.is_set() and offset < len(HEAD):
            for index, sock in enumerate(self.socks):
                if index in self.closed:
                    continue
                if _closed_by_peer(sock):
                    self.closed.add(index)
                    continue
                try:
                    sock.send(HEAD[offset : offset + 1])
                except OSError:
                    self.closed.add(index)
            offset += 1
            time.sleep(0.05)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for sock in self.socks:
            sock.close()


def test_slow_headers_do_not_hold_the_server(server: Server) -> None:
    trickle = Trickle(server.url, SLOW)
    try:
        time.sleep(1.0)  # all connected and trickling; the first 30 were pushed out by the last 20
        latencies = []
        for n in range(5):
            start = time.monotonic()
            response = server.http.post("/judgments", json=instant(500 + n))
            latencies.append(time.monotonic() - start)
            assert response.status_code == 202, response.text
            assert server.http.get(response.json()["url"].removeprefix("/v1")).status_code == 200
        assert max(latencies) < 1.0, latencies
        assert len(trickle.closed) >= SLOW - 20, "connections beyond --max-half-open were not closed"
        deadline = time.monotonic() + 6  # --header-timeout-s 3, and the trickle's own pace
        while len(trickle.closed) < SLOW and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(trickle.closed) == SLOW, f"{SLOW - len(trickle.closed)} slow connections still open"
    finally:
        trickle.close()


def test_a_trickled_body_gets_408(server: Server) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    from tests.service.helpers import TOKEN

    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /v1/judgments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 1000\r\n\r\n{")  # fmt: skip
        start = time.monotonic()
        answer = b""
        while b"\r\n\r\n" not in answer and time.monotonic() - start < 8:
            try:
                sock.send(b" ")
            except OSError:
                break
            readable, _, _ = select.select([sock], [], [], 0.2)
            if readable:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert time.monotonic() - start < 5


def test_an_idle_kept_alive_connection_is_closed(server: Server) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        start = time.monotonic()
        while time.monotonic() - start < 8:  # a byte now and then: uvicorn's keep-alive timer restarts
            if _closed_by_peer(sock):
                break
            try:
                sock.send(b"G")
            except OSError:
                break
            time.sleep(0.5)
        assert time.monotonic() - start < 5, "a connection trickling its next request was kept open"
