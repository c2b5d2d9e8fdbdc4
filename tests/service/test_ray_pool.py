"""The Ray pool on a two-node local cluster (Ray's cluster utilities), build-only: judgments spread over
both nodes, one node is removed mid-run, and every judgment still ends with exactly one verdict.

The nodes declare one logical GPU each, so the judge lanes are placed as on GPU nodes (num_gpus=1):
Ray is too large to carry to the lent GPU machine, so GPU placement is shown on CPU resources here."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted.build import BuildConfig
from cuda_agent.service.jobs import JobQueue
from cuda_agent.service.store import Store
from cuda_agent.service.submission import from_json
from tests.service.helpers import ROOT, instant, slow

FAST_FAILURE_DETECTION = {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                          "health_check_initial_delay_ms": 0}  # fmt: skip
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def test_judgments_spread_over_two_nodes_and_survive_losing_one(tmp_path: Path) -> None:
    """The cluster and its driver live in a child process (this file run as a script): a Ray driver's core
    worker is C++ that can abort its process after the cluster is gone, and inside pytest's process that
    would end every test after this one (a CI run ended with SIGABRT two test files later, no Python
    traceback: the suspected cause). The child prints its findings as JSON; the assertions are here."""
    pytest.importorskip("ray")
    env = {**os.environ, "CUDA_AGENT_CACHE": str(tmp_path / "ray-cache"), "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    done = subprocess.run([sys.executable, __file__, str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=600)  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"the Ray scenario failed (exit {done.returncode}): {done.stderr[-3000:]}"
    facts = json.loads(lines[-1])
    assert facts["lanes"] == 2
    assert set(facts["first_builds"]) == {facts["head"], facts["worker"]}, "builds were not spread over both nodes"
    assert set(facts["first_lanes"]) == {facts["head"], facts["worker"]}  # both lanes judged before the loss
    assert not facts["done_before_the_loss"], "too late to catch them in flight"
    assert facts["statuses"] == ["compile_error"] * 2 + ["task_error"]
    assert facts["retried_lanes"], "no judgment was in flight on the lost node"
    assert all(lanes == [facts["head"]] for lanes in facts["retried_lanes"])  # finished on the surviving node
    assert facts["rows"] == [["done", 5, 5]]


def scenario(tmp_path: Path) -> dict:
    """Two nodes of one logical GPU each; two judgments, then three more with the worker node removed while
    two are in flight. Returns what the test checks."""
    import ray
    from ray.cluster_utils import Cluster

    from cuda_agent.service.ray_pool import RayExecutor

    cluster = Cluster(initialize_head=True, connect=True, head_node_args={
        "num_cpus": 2, "num_gpus": 1, "_system_config": FAST_FAILURE_DETECTION, "include_dashboard": False,
    })  # fmt: skip
    worker = cluster.add_node(num_cpus=2, num_gpus=1)
    cluster.wait_for_nodes()
    executor = RayExecutor(None, JudgeConfig(build=BuildConfig(arch="9.0")), build_only=True, max_attempts=3,
                           ping_timeout_s=2)  # fmt: skip
    store = Store(tmp_path / "judgments.sqlite")
    jobs = JobQueue(store, executor, tmp_path / "scratch", max_pending=32)
    jobs.start()
    facts: dict = {"head": cluster.head_node.node_id, "worker": worker.node_id}
    try:
        facts["lanes"] = executor.lanes
        began = time.monotonic()
        first = [jobs.submit("client", from_json(instant(n), _limits()))[0] for n in range(2)]
        _wait(store, first, 120)
        print(f"first two: {time.monotonic() - began:.0f} s", file=sys.stderr)
        facts["first_builds"] = sorted({node for i in first for node in store.get(i).result["judged_on"]["build"]})
        facts["first_lanes"] = sorted({node for i in first for node in store.get(i).result["judged_on"]["lane"]})
        # Slow judgments (the task probe takes seconds) spread over both nodes, then the worker node goes.
        began = time.monotonic()
        second = [jobs.submit("client", from_json(slow(n), _limits()))[0] for n in range(2)]
        second += [jobs.submit("client", from_json(instant(10 + n), _limits()))[0] for n in range(1)]
        time.sleep(2)
        facts["done_before_the_loss"] = [i for i in second[:2] if store.get(i).state == "done"]
        cluster.remove_node(worker, allow_graceful=False)
        _wait(store, second, 150)
        print(f"after the node loss: {time.monotonic() - began:.0f} s", file=sys.stderr)
        records = [store.get(i).result for i in second]
        facts["statuses"] = [r["status"] for r in records]
        facts["retried_lanes"] = [r["judged_on"]["lane"] for r in records if r["ray_tries"] > 1]
    finally:
        jobs.close()
        ray.shutdown()
        cluster.shutdown()
    db = sqlite3.connect(tmp_path / "judgments.sqlite")
    facts["rows"] = [list(row) for row in db.execute("SELECT state, COUNT(*), COUNT(result) FROM judgments GROUP BY state")]
    return facts


def _limits():
    from cuda_agent.service.submission import Limits

    return Limits()


def _wait(store: Store, ids: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(store.get(i).state == "done" for i in ids):
            return
        time.sleep(0.5)
    states = [store.get(i).state for i in ids]
    raise AssertionError(f"judgments unfinished after {timeout} s: {states}")


if __name__ == "__main__":
    print(json.dumps(scenario(Path(sys.argv[1]))))
