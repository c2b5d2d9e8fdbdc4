"""The candidate sandbox on this machine: no network, limits applied, protections reported honestly."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from cuda_agent.judge.trusted.sandbox import candidate_sandbox


def test_protections_are_reported() -> None:
    sandbox = candidate_sandbox()
    for key in ("process", "network", "user", "not_provided"):
        assert sandbox.protections[key]
    if os.geteuid() != 0:
        assert "NOT" in sandbox.protections["user"]


def test_candidate_has_no_network_and_limits() -> None:
    sandbox = candidate_sandbox()
    if not sandbox.isolate_network:
        pytest.skip("network namespaces are unavailable here (not root, or unshare refused)")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    code = (
        "import socket, resource, sys\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n    print('connected')\n"
        "except OSError as e:\n    print('refused', e)\n"
        "print('nofile', resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             preexec_fn=sandbox.preexec(), cwd="/")  # fmt: skip
    finally:
        server.close()
    assert out.returncode == 0, out.stderr
    assert "refused" in out.stdout and "connected" not in out.stdout
    assert f"nofile {sandbox.limits.open_files}" in out.stdout
    # The same connection from outside the sandbox works, so the refusal above is the namespace's doing.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    with socket.create_connection(server.getsockname(), timeout=3):
        pass
    server.close()
