"""The weight pair (trusted/response_probe.py, reference_response.py): changed set B run again by a second
ModelNew whose parameters differ from the loaded ones only in mantissa bits 0-5. Kernels that store the
weights in 16 mantissa bits pass the precision audit at long K (docs/design/precision.md) but do not
respond to those bits; honest fp32 kernels do. The reference side runs here as in a judgment (CPU:
conftest.py `cpu_reference`), the candidate's second ModelNew in the candidate worker's own code, and the
parent's sequence against scripted workers."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from cuda_agent.judge.candidate import opgate
from cuda_agent.judge.common import tensorfile
from cuda_agent.judge.trusted import response_probe

LONG_K_TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(32768, 16))

    def forward(self, x):
        return x @ self.weight

def get_inputs():
    return [torch.randn(16, 32768)]

def get_init_inputs():
    return []
"""


def round_bits(t: torch.Tensor, keep: int) -> torch.Tensor:
    """`t` (fp32) rounded to nearest with `keep` mantissa bits."""
    drop = 23 - keep
    ints = t.view(torch.int32).to(torch.int64) + (1 << (drop - 1))
    return ((ints >> drop) << drop).to(torch.int32).view(torch.float32)


def split_k(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """An honest fp32 product in another order: split-K over 4 slices, summed afterwards."""
    k = x.shape[1]
    return (x.view(x.shape[0], 4, k // 4).transpose(0, 1) @ w.view(4, k // 4, w.shape[1])).sum(0)


def _prepare(worker: Any, tmp_path: Path, source: str = LONG_K_TASK, stage: bool = False) -> dict[str, Any]:
    task = tmp_path / "task.py"
    task.write_text(source)
    folder = str(tmp_path / "slot" / "changed") if stage else None
    if stage:
        (tmp_path / "slot").mkdir(mode=0o700, exist_ok=True)
    return worker.prepare(str(task), str(tmp_path), 1, [11, 12], 14, 1e-2, 1e-2, stage_dir=folder)


def _judge(worker: Any, tmp_path: Path, first_kernel: Any, second_kernel: Any, k: float = 3.0,
           tol: float = 1e-2) -> tuple[dict, dict, dict]:  # fmt: skip
    """Both changed sets on the loaded parameters, then set B with the second point's parameters (read
    from the state file the reference writes for the candidate), as the verification stage runs them;
    `k` is the precision audit's bound, `tol` atol = rtol. The cheats below run with tol 0.05: the draws
    are the judge's secret ones, and at 1e-2 an output near zero can fail the plain tolerance first
    (1 of 256 by 0.0113 in one CI run), which refuses the cheat but not through the check under test."""
    replies = []
    for which in (0, 1):
        written = worker.write_changed(which, str(tmp_path))
        (x,) = tensorfile.load(written["path"], "cpu", trusted=False)
        out = tmp_path / f"out_{which}.tensors"
        tensorfile.save([first_kernel(x, worker.model.weight.detach())], out)
        replies.append(worker.compare_changed(which, str(out), tol, tol, aliases=[[]], precision_k=k))
    state = torch.load(worker.write_variant(str(tmp_path))["path"], weights_only=True)["state_dict"]
    written = worker.write_changed(1, str(tmp_path))
    (x,) = tensorfile.load(written["path"], "cpu", trusted=False)
    out = tmp_path / "out_variant.tensors"
    tensorfile.save([second_kernel(x, state["weight"])], out)
    return replies[0], replies[1], worker.compare_variant(str(out), tol, tol, aliases=[[]], precision_k=k)


def test_the_loaded_state_is_the_first_point_and_the_second_differs_only_in_bits_0_to_5(cpu_reference, tmp_path) -> None:
    reply = _prepare(cpu_reference, tmp_path)
    made = reply["response_probe"]["weights"]
    assert made["made"] and made["moved_parameters"] == 1, made
    assert made["moved_elements"] > 0.9 * 32768 * 16
    loaded = torch.load(tmp_path / "state.pt", weights_only=True)["state_dict"]["weight"]
    assert torch.equal(loaded, cpu_reference.model.weight.detach()), "the reference computes at the loaded point"
    second = cpu_reference.weight_pair.state["weight"]
    a, b = loaded.view(torch.int32), second.view(torch.int32)
    assert torch.equal(a >> 6, b >> 6), "every bit a 16-bit layout keeps (and its rounding bit) is the same"
    assert (a != b).float().mean() > 0.9, "almost every element moved"
    generic = (a & 0xFFFF) != 0  # values with no low bits set are not generic and stay (rounding_probe.py)
    assert bool(((b[generic] & 63) != 0).all()), "never to zero: no tie where a lowered copy rounds"
    assert torch.equal(a[~generic], b[~generic])


def test_an_honest_kernel_passes_at_both_points(cpu_reference, tmp_path) -> None:
    _prepare(cpu_reference, tmp_path)
    first, second, variant = _judge(cpu_reference, tmp_path, split_k, split_k)
    assert first["match"] and second["match"], (first, second)
    assert variant["match"], variant
    (found,) = variant["weight_response"]
    assert abs(found["alignment"]) < response_probe.ALIGNMENT, found


def test_weights_kept_in_16_bits_fail_the_audit_at_the_moved_point(cpu_reference, tmp_path) -> None:
    """Rounded to 16 mantissa bits at load, weights on terms of both signs err at random around a generic
    point: inside the audit's bound from K of about 8k (docs/design/precision.md). The loaded point's
    lowest bits are moved along the gradient of a secret weighting of the outputs, so rounding them errs
    coherently along it, and the audit sees it at K = 32768 already."""
    _prepare(cpu_reference, tmp_path)

    def packed(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x @ round_bits(w, 16)

    first, _, _ = _judge(cpu_reference, tmp_path, packed, packed, tol=0.05)
    assert not first["match"] and first["reason"].startswith("precision audit"), first
    assert first["error_ratio"] > 6, first


def test_weights_kept_in_16_bits_fail_the_weight_pair_whatever_the_audits_bound(cpu_reference, tmp_path) -> None:
    """The weight pair does not depend on the audit's bound: with a bound loose enough that each set
    passes, the second point rounds to the same weights and the response is missing."""
    _prepare(cpu_reference, tmp_path)

    def packed(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x @ round_bits(w, 16)

    first, second, variant = _judge(cpu_reference, tmp_path, packed, packed, k=1000.0, tol=0.05)
    assert first["match"] and second["match"], (first, second)  # each set alone passes this bound
    assert not variant["match"] and variant["reason"].startswith("weight response check"), variant
    assert "missed all" in variant["reason"] and "fewer mantissa bits" in variant["reason"]


def test_a_kernel_exact_only_in_its_second_instance_still_fails(cpu_reference, tmp_path) -> None:
    """The loaded point is itself moved from a base never handed over, so the first instance's rounding
    errs along the secret direction even where the second computes exactly."""
    _prepare(cpu_reference, tmp_path)
    first, second, variant = _judge(cpu_reference, tmp_path, lambda x, w: x @ round_bits(w, 16), split_k, k=1000.0,
                                    tol=0.05)  # fmt: skip
    assert first["match"] and second["match"], (first, second)
    assert not variant["match"] and variant["reason"].startswith("weight response check"), variant


def test_a_group_candidate_starts_without_the_previous_ones_first_point(cpu_reference, tmp_path) -> None:
    _prepare(cpu_reference, tmp_path)
    written = cpu_reference.write_changed(1, str(tmp_path))
    (x,) = tensorfile.load(written["path"], "cpu", trusted=False)
    tensorfile.save([split_k(x, cpu_reference.model.weight.detach())], tmp_path / "o.tensors")
    cpu_reference.compare_changed(1, str(tmp_path / "o.tensors"), 1e-2, 1e-2, aliases=[[]], precision_k=3.0)
    assert cpu_reference.weight_pair.first is not None
    cpu_reference.end_candidate()
    assert cpu_reference.weight_pair.first is None


def test_a_task_without_fp32_parameters_says_why(cpu_reference, tmp_path) -> None:
    source = LONG_K_TASK.replace("self.weight = nn.Parameter(torch.randn(32768, 16))",
                                 "self.register_buffer('weight', torch.randn(32768, 16))")  # fmt: skip
    weights = _prepare(cpu_reference, tmp_path, source)["response_probe"]["weights"]
    assert not weights["made"] and "no fp32 or float64 parameter" in weights["why"]
    assert cpu_reference.weight_pair is None


def test_the_staged_second_point_is_the_one_written_before_the_call(cpu_reference, tmp_path) -> None:
    reply = _prepare(cpu_reference, tmp_path, stage=True)
    staged = Path(reply["response_probe"]["weights"]["staged"]["path"])
    assert staged.parent == tmp_path / "slot" / "changed" and staged.name == "variant_state.pt"
    written = Path(cpu_reference.write_variant(str(tmp_path))["path"])
    a = torch.load(staged, weights_only=True)["state_dict"]["weight"]
    b = torch.load(written, weights_only=True)["state_dict"]["weight"]
    assert torch.equal(a, b) and torch.equal(a, cpu_reference.weight_pair.state["weight"])
    assert not torch.equal(a, cpu_reference.model.weight.detach()), "the reference is back at the loaded point"


# --- the candidate worker's second ModelNew ------------------------------------------------------------

MODEL_NEW = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    built = 0

    def __init__(self, rows):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(rows, 4))
        ModelNew.built += 1

    def forward(self, x):
        return x @ self.weight
"""


def test_the_candidate_worker_builds_a_second_model_and_keeps_the_first(tmp_path, monkeypatch) -> None:
    from cuda_agent.judge.candidate import worker as worker_module
    from cuda_agent.judge.candidate.inputs import fingerprint

    monkeypatch.setattr(opgate, "_capturing", lambda: False)  # no GPU here: nothing captures
    load = torch.load
    monkeypatch.setattr(torch, "load", lambda path, map_location=None, **kw: load(path, map_location="cpu", **kw))
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda *a, **k: None)
    (tmp_path / "model_new.py").write_text(MODEL_NEW)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "model_new", raising=False)

    worker = worker_module.CandidateWorker()
    worker.settings = worker_module.math_settings()
    worker.init_inputs = [8]
    first_weight = torch.randn(8, 4)
    worker.model, _ = worker._construct({"weight": first_weight}, first=False)
    second_weight = torch.randn(8, 4)
    torch.save({"state_dict": {"weight": second_weight}}, tmp_path / "variant_state.pt")
    x = torch.randn(3, 8)
    tensorfile.save([x], tmp_path / "inputs.tensors")
    worker.inputs = SimpleNamespace(get=lambda seed, path: tensorfile.load(path, "cpu", trusted=False))
    reply = worker.run_variant(str(tmp_path / "variant_state.pt"), str(tmp_path / "inputs.tensors"),
                               str(tmp_path / "out.tensors"))  # fmt: skip
    (out,) = tensorfile.load(str(tmp_path / "out.tensors"), "cpu", trusted=False)
    assert torch.allclose(out, x @ second_weight), "the second ModelNew computes with the second point"
    assert sys.modules["model_new"].ModelNew.built == 2
    assert torch.equal(worker.model.weight.detach(), first_weight), "the first ModelNew is as it was"
    assert reply["input_print"] == fingerprint([x]) and reply["captured"] == {}
    assert reply["forbidden"], "PyTorch compute in the second forward is reported like any call's"


def test_a_model_that_cannot_be_built_twice_is_told_why(tmp_path, monkeypatch) -> None:
    from cuda_agent.judge.candidate import worker as worker_module

    monkeypatch.setattr(opgate, "_capturing", lambda: False)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    (tmp_path / "model_new.py").write_text(MODEL_NEW.replace(
        "ModelNew.built += 1", "ModelNew.built += 1\n        assert ModelNew.built == 1, 'one instance only'"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "model_new", raising=False)
    worker = worker_module.CandidateWorker()
    worker.init_inputs = [8]
    worker._construct({"weight": torch.zeros(8, 4)}, first=False)
    with pytest.raises(worker_module.CandidateError, match="constructible more than once"):
        worker._construct({"weight": torch.zeros(8, 4)}, first=False)


def test_the_benchmark_passes_honest_orders_and_catches_packed_parameters() -> None:
    """benchmarks/weight_pair.py on one catalogue case: every honest order passes both checks, and the
    reference's own forward with parameters packed to 16 or 15 bits is refused by the pair."""
    from tests.benchmark_module import load_benchmark

    bench = load_benchmark("weight_pair")
    case = next(c for c in bench.pv.cases("cpu") if c.name == "Linear fp32, K=1024")
    rows, cost = bench.run_case(case, 3.0, "cpu", 0)
    assert "why" not in cost and rows
    honest = [r for r in rows if r["honest"]]
    assert honest and all(r["response_passed"] and r["audit_passed"] for r in honest), honest
    packed = {r["variant"]: r for r in rows if r["variant"].startswith("parameters packed")}
    for bits in (16, 15):
        row = packed[f"parameters packed to {bits} bits"]
        assert not row["response_passed"] and row["missing"] < -0.9, row


def test_inputs_a_seed_does_not_reproduce_keep_the_low_bit_pair_and_say_why_there_is_no_weight_pair(
    cpu_reference, tmp_path
) -> None:
    """The parameters are aimed at the base set before the verification sets; where drawing it again from
    its seed gives other inputs, the aim does not fit them: the low-bit pair is made on the new draw, the
    weight pair is not, and the verdict says why."""
    source = LONG_K_TASK.replace(  # each draw shifted by how many came before it
        "def get_inputs():\n    return [torch.randn(16, 32768)]",
        "DRAWS = [0]\n\ndef get_inputs():\n    DRAWS[0] += 1\n    return [torch.randn(16, 32768) + DRAWS[0]]",
    )
    assert "DRAWS[0] += 1" in source
    probe = _prepare(cpu_reference, tmp_path, source)["response_probe"]
    assert probe["sets"] == 2, probe
    assert not probe["weights"]["made"] and "differ when drawn again" in probe["weights"]["why"], probe["weights"]
