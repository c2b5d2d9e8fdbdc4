"""The judge server on a GPU: an honest example judged over HTTP agrees with the in-process judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.service.client import RemoteJudge
from tests.service.helpers import ROOT, TOKEN, Server

pytestmark = pytest.mark.gpu


def test_honest_example_over_http_matches_the_local_judge(tmp_path: Path) -> None:
    from cuda_agent.judge.decide.service import JudgeService

    example = ROOT / "examples" / "elementwise_chain"
    with JudgeService() as service:
        local = service.judge(example)
    server = Server(tmp_path / "gpu-server", gpu=True)
    try:
        with RemoteJudge(server.url, token=TOKEN, timeout_s=600) as remote:
            verdicts = dict(remote.judge_many([example, ROOT / "examples" / "compile_error"]))
        metrics = server.http.get(server.url + "/metrics").text
    finally:
        server.stop()
    assert local.status.value == "ok" and verdicts[0].status.value == "ok"
    assert verdicts[0].reward == local.reward and verdicts[0].timing is not None
    assert verdicts[1].status.value == "compile_error"
    assert "cuda_agent_judge_lanes 1.0" in metrics and 'cuda_agent_judge_verdicts_total{status="ok"} 1.0' in metrics
