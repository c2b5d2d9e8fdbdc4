"""On a GPU: a final judgment through the eval backend holds the GPU alone while another process keeps
the GPU busy in bursts, each burst under the lease shared (what an agent's tool command does): no burst
runs inside the judgment, and the speedup agrees with a quiet judgment of the same files within the
noise the verdicts measured."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from eval_helpers import MINI

from cuda_agent import gpu_lease
from cuda_agent.eval.judges import JudgeSettings, LocalBackend, leased
from cuda_agent.eval.recheck import noise_bound
from cuda_agent.task import load_task

LOAD = """
import json, sys, time, torch
from cuda_agent import gpu_lease
log, stop = sys.argv[1], sys.argv[2]
a = torch.randn(4096, 4096, device="cuda")
import os
while not os.path.exists(stop):
    with gpu_lease.hold(gpu_lease.tool_gpus(), gpu_lease.SHARED):
        start = time.time()
        for _ in range(20):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()
        end = time.time()
    with open(log, "a") as handle:
        handle.write(json.dumps([start, end]) + "\\n")
"""


@pytest.mark.gpu
def test_a_judgment_holds_the_gpu_against_shared_bursts_and_agrees_with_a_quiet_one(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(gpu_lease.DIR_ENV, str(tmp_path / "leases"))
    task_id = "level1/23_Softmax"
    folder = tmp_path / "sub"
    folder.mkdir()
    for path in (MINI / "solutions" / task_id).rglob("*"):
        if path.is_file():
            (folder / path.relative_to(MINI / "solutions" / task_id)).parent.mkdir(parents=True, exist_ok=True)
            (folder / path.relative_to(MINI / "solutions" / task_id)).write_bytes(path.read_bytes())
    task = load_task(MINI / f"{task_id}.py", name="level1_23_Softmax")
    backend = leased(LocalBackend(JudgeSettings()))
    assert backend.gpus(), "the GPU could not be named: no lease would be taken"
    try:
        quiet = backend.judge(folder, task, "quiet")
        assert quiet["status"] == "ok", quiet["reason"]
        log, stop = tmp_path / "bursts.jsonl", tmp_path / "stop"
        load = subprocess.Popen([sys.executable, "-c", LOAD, str(log), str(stop)])
        try:
            deadline = time.monotonic() + 120
            while not (log.exists() and log.read_text().count("\n") >= 3):  # the load is running
                assert load.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
            began = time.time()
            busy = backend.judge(folder, task, "busy")
            ended = time.time()
            time.sleep(1.0)
        finally:
            stop.touch()
            load.wait(60)
    finally:
        backend.close()
    assert busy["status"] == "ok", busy["reason"]
    bursts = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(end > ended for _, end in bursts), "the load stopped before the judgment ended"
    held_from = ended - busy["gpu_lease"]["held_s"]
    assert not [b for b in bursts if b[0] < ended and held_from < b[1]], "a burst ran inside the judgment"
    assert busy["gpu_lease"]["waited_s"] >= 0 and began <= held_from
    old, new = quiet["verdict"]["timing"], busy["verdict"]["timing"]
    change = new["speedup_vs_eager"] / old["speedup_vs_eager"] - 1
    assert abs(change) <= noise_bound(old, new, "eager"), (old["speedup_vs_eager"], new["speedup_vs_eager"])
