"""The Ray pool on a two-node local cluster (Ray's cluster utilities), build-only: judgments spread over
both nodes, one node is removed mid-run, and every judgment still ends with exactly one verdict.

The nodes declare one logical GPU each, so the judge lanes are placed as on GPU nodes (num_gpus=1):
Ray is too large to carry to the lent GPU machine, so GPU placement is shown on CPU resources here."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted.build import BuildConfig
from cuda_agent.service.jobs import JobQueue
from cuda_agent.service.store import Store
from cuda_agent.service.submission import from_json
from tests.service.helpers import instant, slow

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]
FAST_FAILURE_DETECTION = {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                          "health_check_initial_delay_ms": 0}  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, monkeypatch_module: pytest.MonkeyPatch):
    monkeypatch_module.setenv("CUDA_AGENT_CACHE", str(tmp_path_factory.mktemp("ray-cache")))
    monkeypatch_module.setenv("RAY_USAGE_STATS_ENABLED", "0")
    cluster = Cluster(initialize_head=True, connect=True, head_node_args={
        "num_cpus": 2, "num_gpus": 1, "_system_config": FAST_FAILURE_DETECTION, "include_dashboard": False,
    })  # fmt: skip
    worker = cluster.add_node(num_cpus=2, num_gpus=1)
    cluster.wait_for_nodes()
    yield cluster, worker
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_judgments_spread_over_two_nodes_and_survive_losing_one(cluster, tmp_path: Path) -> None:
    from cuda_agent.service.ray_pool import RayExecutor

    cluster, worker = cluster
    executor = RayExecutor(None, JudgeConfig(build=BuildConfig(arch="9.0")), build_only=True, max_attempts=3,
                           ping_timeout_s=2)  # fmt: skip
    store = Store(tmp_path / "judgments.sqlite")
    jobs = JobQueue(store, executor, tmp_path / "scratch", max_pending=32)
    jobs.start()
    try:
        assert executor.lanes == 2
        began = time.monotonic()
        first = [jobs.submit("client", from_json(instant(n), _limits()))[0] for n in range(2)]
        _wait(store, first, 120)
        print(f"first two: {time.monotonic() - began:.0f} s")
        nodes = {node for i in first for node in store.get(i).result["judged_on"]["build"]}
        lanes = {node for i in first for node in store.get(i).result["judged_on"]["lane"]}
        head, worker_id = cluster.head_node.node_id, worker.node_id
        assert nodes == {head, worker_id}, "builds were not spread over both nodes"
        # Slow judgments (the task probe takes seconds) spread over both nodes, then the worker node goes.
        began = time.monotonic()
        second = [jobs.submit("client", from_json(slow(n), _limits()))[0] for n in range(2)]
        second += [jobs.submit("client", from_json(instant(10 + n), _limits()))[0] for n in range(1)]
        time.sleep(2)
        assert all(store.get(i).state != "done" for i in second[:2]), "too late to catch them in flight"
        cluster.remove_node(worker, allow_graceful=False)
        _wait(store, second, 150)
        print(f"after the node loss: {time.monotonic() - began:.0f} s")
        records = [store.get(i).result for i in second]
        assert [r["status"] for r in records] == ["compile_error"] * 2 + ["task_error"]
        retried = [r for r in records if r["ray_tries"] > 1]
        assert retried, "no judgment was in flight on the lost node"
        assert all(r["judged_on"]["lane"] == [head] for r in retried)  # finished on the surviving node
        assert lanes == {head, worker_id}  # both lanes judged before the loss
    finally:
        jobs.close()
    db = sqlite3.connect(tmp_path / "judgments.sqlite")
    assert db.execute("SELECT state, COUNT(*), COUNT(result) FROM judgments GROUP BY state").fetchall() == [
        ("done", 5, 5)
    ]


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
