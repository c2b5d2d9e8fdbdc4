"""The candidate's whole life before its first call (issue 33, class 1): a CUDA graph of PyTorch ops
captured while the model is imported, built or loaded replays ATen's kernels in forward with no dispatch
at call time, so the op gate around calls never saw it. The capture gate (candidate/opgate.py) watches
import, construction and load_state_dict for compute ops dispatched while a stream captures; the parent
refuses such a load. (What the replay runs is attributed by binary too: test_what_runs.py.)

No GPU here: whether the current stream captures is scripted (`opgate._capturing`); the ops are CPU ops
dispatched through the same mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from cuda_agent.judge.candidate import opgate
from cuda_agent.judge.candidate.opgate import CaptureGate
from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.judgment import Judgment, Stop
from cuda_agent.task import Task


def test_ops_captured_while_loading_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    capturing = False
    monkeypatch.setattr(opgate, "_capturing", lambda: capturing)
    x, w, b = torch.randn(4, 8), torch.randn(8, 8), torch.randn(8)
    gate = CaptureGate()
    with gate:
        F.linear(x, w, b).relu()  # a warm-up outside the capture: allowed
        torch.empty(4, 8)
        capturing = True  # inside `with torch.cuda.graph(g):`
        static_out = torch.empty(4, 8)  # allocation is no compute
        F.layer_norm(F.gelu(F.linear(x, w, b)), (8,))
        static_out.zero_()
        capturing = False
    captured = set(gate.forbidden)
    assert {"aten.addmm", "aten.gelu", "aten.native_layer_norm"} <= captured, captured
    assert "aten.relu" not in captured and "aten.empty" not in captured and "aten.zero_" not in captured


def test_nothing_is_recorded_without_a_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opgate, "_capturing", lambda: False)
    gate = CaptureGate()
    with gate:
        torch.softmax(torch.randn(3, 5) @ torch.randn(5, 5), dim=-1)
    assert not gate.forbidden and gate.seen  # seen, not forbidden


class LoadingCandidate:
    pid = 2

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        return {"ok": True, "shared_path": None, **(self.reply if command == "load" else {})}


class Reference:
    pid = 1

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        return {"ok": True, "free": 10**12}


@pytest.mark.parametrize(("captured", "refused"), [({}, False), ({"aten._scaled_dot_product_flash_attention": 1}, True)])
def test_the_parent_refuses_a_load_that_captured_pytorch_ops(tmp_path: Path, captured: dict, refused: bool) -> None:
    made = Judgment(tmp_path, Task(name="t", source="", path=tmp_path / "model.py"),
                    JudgeConfig(scratch_dir=tmp_path / "scratch"))  # fmt: skip
    made.candidate_dir = made.io_dir = tmp_path
    made.task_file = tmp_path / "model.py"
    cand = LoadingCandidate({"captured": captured})
    if not refused:
        made.load_candidate(cand, Reference())  # type: ignore[arg-type]
        return
    with pytest.raises(Stop) as stopped:
        made.load_candidate(cand, Reference())  # type: ignore[arg-type]
    reason = stopped.value.verdict.reason
    assert stopped.value.verdict.status.value == "rejected"
    assert "captured PyTorch compute ops into a CUDA graph" in reason and "_scaled_dot_product_flash_attention" in reason
