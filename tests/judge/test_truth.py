"""The precision audit's truth (trusted/truth.py), issue 35 class 3: a float64 evaluation of the reference
is made even where the model casts inside forward, passes dtype=torch.float32 or builds float32 tensors
itself (the old audit's float64 copy of the model came back float32 or failed there, and the audit was
skipped: TF32 passed); casts to fp16/bf16 and autocast are kept as roundings; indices are never promoted;
where no truth can be made at all the judge fails closed (reward at most 1)."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.judgment import Judgment
from cuda_agent.judge.decide.verdict import Stat, Timing
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.judge.trusted.reference_worker import judge_outputs
from cuda_agent.judge.trusted.truth import NAME, TruthModel
from cuda_agent.task import Task

K = JudgeConfig().precision_k


def tf32(t: torch.Tensor) -> torch.Tensor:
    """float32 rounded to TF32 (10 explicit mantissa bits)."""
    m, e = torch.frexp(t.double())
    return torch.ldexp(torch.round(m * 2.0**11) / 2.0**11, e).float()


class CastsInput(nn.Module):
    """fp16 input, `x.float()` in forward, an fp32 Linear with a long reduction."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2048, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.float())


class DtypeArguments(nn.Module):
    """dtype=torch.float32 passed to ops, and a float32 tensor made in forward (the float64 copy failed:
    'expected both tensors to be the same dtype')."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(1024, 32) / 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ones = torch.ones(x.shape[0], dtype=torch.float32)
        y = torch.softmax(x @ self.weight, dim=-1, dtype=torch.float32)
        return y + torch.sum(x, dim=-1, keepdim=True, dtype=torch.float32) * 1e-3 + (ones @ x)[:32] * 1e-3


class KeepsHalf(nn.Module):
    """An fp32 task that computes its matmul in fp16 on purpose."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(256, 64) / 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.half() @ self.weight.half()).float()


class Autocast(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(256, 64) / 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            return (x @ self.weight).float()


class Indices(nn.Module):
    """An int64 index buffer, an int input, an embedding: indices must reach their ops as integers."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Embedding(100, 16)
        self.register_buffer("pick", torch.tensor([3, 1, 4, 1, 5]))

    def forward(self, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        assert tokens.dtype == torch.int64 and self.pick.dtype == torch.int64
        return self.table(tokens).sum(1) + x.index_select(1, self.pick).sum(1, keepdim=True)


class ReadsBits(nn.Module):
    """Reads float bits as integers: no float64 evaluation can follow that."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.view(torch.int32) & 0x7FFFFF).float() * x


def test_a_model_that_casts_to_float32_inside_forward_gets_a_float64_truth() -> None:
    torch.manual_seed(0)
    model = CastsInput().eval()
    x = torch.randn(16, 2048).half()
    truth_model = TruthModel(model)
    (truth,) = truth_model.outputs([x]) or [None]
    assert truth is not None and truth_model.name == NAME
    exact = x.double() @ model.linear.weight.double().t() + model.linear.bias.double()
    assert truth.value.dtype == torch.float64 and truth.dtype == torch.float32
    assert torch.allclose(truth.value, exact, rtol=1e-13, atol=1e-13)
    ref = model(x)
    assert (ref.double() - exact).abs().max() > 1e-8, "the fp32 reference is not the truth"
    # and the audit it enables: TF32 inside the tolerance, refused; the reference itself passes
    cheat = tf32(x.float()) @ tf32(model.linear.weight.detach()).t() + model.linear.bias.detach()
    assert judge_outputs([ref], [cheat], Tolerance(), None, None, None, None)["match"], "within 1e-2"
    decided = judge_outputs([ref], [cheat], Tolerance(), None, None, [truth], K)
    assert not decided["match"] and "precision audit" in decided["reason"]
    assert judge_outputs([ref], [ref.clone()], Tolerance(), None, None, [truth], K)["match"]


def test_dtype_arguments_and_float32_tensors_made_in_forward_are_promoted() -> None:
    torch.manual_seed(1)
    model = DtypeArguments().eval()
    x = torch.randn(32, 1024)
    (truth,) = TruthModel(model).outputs([x]) or [None]
    assert truth is not None
    xd, wd = x.double(), model.weight.double()
    exact = torch.softmax(xd @ wd, -1) + xd.sum(-1, keepdim=True) * 1e-3 + (torch.ones(32).double() @ xd)[:32] * 1e-3
    assert torch.allclose(truth.value, exact, rtol=1e-12, atol=1e-14)


class PlainAttribute(nn.Module):
    """A weight kept as a plain tensor attribute made in __init__ (a pre-transposed copy), neither a
    parameter nor a buffer: KernelBench's level-3 RNNs keep their initial states this way."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(64, 64) / 8)
        self.weight_t = self.weight.detach().t().contiguous()
        self.h0 = torch.randn(1, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight_t + self.h0


def test_a_plain_tensor_attribute_is_promoted_with_the_rest() -> None:
    """It met a float64 payload in a matmul and the truth failed ("double != float"): no truth, so an
    honest kernel's reward was capped (white-box probe, 2026-12-06)."""
    torch.manual_seed(2)
    model = PlainAttribute().eval()
    x = torch.randn(16, 64)
    truth_model = TruthModel(model)
    (truth,) = truth_model.outputs([x]) or [None]
    assert truth is not None, truth_model.problem
    exact = x.double() @ model.weight_t.double() + model.h0.double()
    assert torch.allclose(truth.value, exact, rtol=1e-12, atol=1e-14)
    assert model.weight_t.dtype == torch.float32, "the model's own attribute was changed"


def test_a_half_cast_inside_the_model_is_kept_as_a_rounding() -> None:
    torch.manual_seed(2)
    model = KeepsHalf().eval()
    x = torch.randn(8, 256)
    (truth,) = TruthModel(model).outputs([x]) or [None]
    assert truth is not None
    rounded = x.half().double() @ model.weight.half().double()
    unrounded = x.double() @ model.weight.double()
    assert torch.allclose(truth.value, rounded, rtol=1e-13, atol=1e-13)
    assert (truth.value - unrounded).abs().max() > 1e-4, "the fp16 rounding is part of the task"
    # a kernel that rounds like the task does (fp16 operands, fp32 accumulation) passes
    honest = (x.half().float() @ model.weight.detach().half().float()).half().float()
    assert judge_outputs([model(x)], [honest], Tolerance(), None, None, [truth], K)["match"]


def test_autocast_inside_the_model_is_kept() -> None:
    torch.manual_seed(3)
    model = Autocast().eval()
    x = torch.randn(8, 256)
    (truth,) = TruthModel(model).outputs([x]) or [None]
    assert truth is not None
    rounded = x.bfloat16().double() @ model.weight.bfloat16().double()
    assert torch.allclose(truth.value, rounded, rtol=1e-13, atol=1e-13)


def test_indices_and_integer_inputs_are_not_promoted() -> None:
    torch.manual_seed(4)
    model = Indices().eval()
    x, tokens = torch.randn(4, 8), torch.randint(0, 100, (4, 6))
    truth_model = TruthModel(model)
    (truth,) = truth_model.outputs([x, tokens]) or [None]
    assert truth is not None, truth_model.problem
    exact = model.table.weight.double()[tokens].sum(1) + x.double()[:, [3, 1, 4, 1, 5]].sum(1, keepdim=True)
    assert torch.allclose(truth.value, exact, rtol=1e-13)
    assert torch.equal(model.pick, torch.tensor([3, 1, 4, 1, 5])), "the truth never writes the reference's state"


def test_no_truth_is_said_and_fails_closed(tmp_path: Path) -> None:
    model = ReadsBits()
    truth_model = TruthModel(model)
    assert truth_model.outputs([torch.randn(64)]) is None
    assert "as another dtype" in truth_model.problem
    x = torch.randn(64)
    decided = judge_outputs([model(x)], [model(x)], Tolerance(), None, None, None, K)
    assert decided["match"] and decided["no_truth"] == ["output"]
    # the parent caps the reward at 1, saying why
    made = Judgment(tmp_path, Task(name="t", source="", path=tmp_path / "m.py"), JudgeConfig(scratch_dir=tmp_path / "s"))
    made.started = made.started
    stat = Stat(median=1.0, p25=1.0, p75=1.0, min=1.0, samples=10)
    timing = Timing(1.0, 3.0, 3.0, 3.0, 3.0, 2.9, 2.9, stat, stat, stat, 10, "measured", "v5")
    assert made.verdict_ok(timing).reward == 3
    made.note_error_ratio(decided)
    capped = made.verdict_ok(timing)
    assert capped.reward == 1 and "reward capped at 1" in capped.reason and "precision audit" in capped.reason
    assert capped.checks["precision_audit"].startswith("none")


def test_the_truth_carries_unknowable_elements_past_a_near_tie() -> None:
    """argmax within the error of a tie: the row is left out of the audit, not counted against a kernel."""

    class Pick(nn.Module):
        def forward(self, scores: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
            return table[scores.argmax(-1)]

    scores = torch.randn(6, 5)
    scores[0, 1] = scores[0].max() + 1e-9  # a near tie in row 0
    table = torch.randn(5, 3)
    (truth,) = TruthModel(Pick()).outputs([scores, table]) or [None]
    assert truth is not None and truth.sigma is not None
    assert bool(torch.isinf(truth.sigma[0]).all()) and bool(torch.isfinite(truth.sigma[1:]).all())


@pytest.mark.parametrize("model,inputs", [
    (nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.GELU(), nn.MaxPool2d(2)).eval(),
     [torch.randn(2, 3, 8, 8)]),
    (nn.Sequential(nn.Linear(32, 32), nn.LayerNorm(32), nn.Softmax(-1)).eval(), [torch.randn(4, 32)]),
    (nn.Sequential(nn.GroupNorm(2, 4), nn.SiLU(), nn.ConvTranspose2d(4, 2, 4, stride=2, padding=1)).eval(),
     [torch.randn(2, 4, 6, 6)]),
])  # fmt: skip
def test_common_layers_have_a_truth_that_bounds_their_own_reference(model: nn.Module, inputs: list[torch.Tensor]) -> None:
    truth_model = TruthModel(model)
    (truth,) = truth_model.outputs(inputs) or [None]
    assert truth is not None, truth_model.problem
    assert not truth_model.unmodelled, truth_model.unmodelled
    ref = model(*inputs)
    decided = judge_outputs([ref], [ref.clone()], Tolerance(), None, None, [truth], K)
    assert decided["match"] and decided["error_ratio"] < 1.0
    assert math.isfinite(float(truth.value.abs().max()))


def test_skill_md_states_the_precision_rules() -> None:
    from cuda_agent.workspace.files import template_path

    skill = template_path("SKILL.md").read_text()
    section = skill[skill.index("### Precision") :]
    assert skill.index("## Rules") < skill.index("### Precision") < skill.index("## Workspace")
    for rule in ("float64", "fp32 accumulation", "TF32", "CUDNN_FMA_MATH", "allow_tf32", "Welford", "at most 3",
                 "precision audit"):  # fmt: skip
        assert rule in section, rule
    assert f"at most {K:g}" in section


def test_the_math_policy_is_pinned_and_keys_the_baseline_cache() -> None:
    """fp32 means fp32 for the reference, the baselines and the candidate's defaults, convolutions too
    (PyTorch's default lets cuDNN use TF32); baselines cached under another policy are not reused."""
    from cuda_agent.judge.common import math_policy
    from cuda_agent.judge.trusted import baselines

    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32,
             torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
             torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)  # fmt: skip
    try:
        torch.backends.cudnn.allow_tf32 = True
        math_policy.pin()
        assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
        assert not torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        assert not torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
    finally:
        (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32,
         torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
         torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction) = saved  # fmt: skip
    import hashlib

    from cuda_agent.judge.candidate.sampler import PROTOCOL_VERSION

    without = hashlib.sha256(f"task|env|{PROTOCOL_VERSION}".encode()).hexdigest()
    assert baselines.cache_key("task", "env") != without


class _KeepsHidden(nn.Module):
    """A recurrent cell that keeps its state in a plain tensor attribute, as KernelBench's level3/33
    VanillaRNN does: functional_call swaps parameters and buffers, not such attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(16, 8)
        self.hidden = torch.zeros(4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.hidden = self.hidden.to(x.device)
        self.hidden = torch.tanh(self.cell(torch.cat((x, self.hidden), dim=1)))
        self.seen = self.hidden * 1.0  # an attribute only forward makes
        return self.hidden


def test_the_truth_leaves_a_models_tensor_attributes_as_it_found_them() -> None:
    """Before the fix the truth's evaluation left a tracked `hidden` on the model, and the reference's
    next plain forward raised Untrackable (level3/33_VanillaRNN on the H100, 2026-12-05)."""
    model = _KeepsHidden()
    x = torch.rand(4, 8)
    before = model.hidden
    truth = TruthModel(model).outputs([x])
    assert truth is not None and truth[0] is not None and truth[0].value.dtype == torch.float64
    assert model.hidden is before and not hasattr(model, "seen")
    assert torch.isfinite(model(x)).all()


class _KeepsHistory(nn.Module):
    """State in containers: a list of past states appended to, a dict of caches overwritten, a tuple holding
    a list, and an empty list that only forward fills."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)
        self.history = [torch.zeros(4, 8)]
        self.cache = {"last": torch.zeros(4, 8)}
        self.pair = (torch.ones(1), [])
        self.later: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.tanh(self.cell(x + self.history[-1]))
        self.history.append(out)
        self.cache["last"] = out
        self.pair[1].append(out)
        self.later.append(out)
        return out


def test_the_truth_puts_back_state_kept_in_lists_dicts_and_tuples() -> None:
    model = _KeepsHistory()
    history, cache, pair, later = model.history, model.cache, model.pair, model.later
    first, last = model.history[0], model.cache["last"]
    truth = TruthModel(model).outputs([torch.rand(4, 8)])
    assert truth is not None and truth[0] is not None and truth[0].value.dtype == torch.float64
    # the same containers, holding what they held: no tracked tensor of the truth's left anywhere
    assert model.history is history and history == [first] and history[0] is first
    assert model.cache is cache and cache == {"last": last} and cache["last"] is last
    assert model.pair is pair and pair[1] == [] and model.later is later and later == []
    out = model(torch.rand(4, 8))  # the plain forward works, and keeps its state as it would have
    assert torch.isfinite(out).all() and len(model.history) == 2 and model.later == [out]


class Recurrent(nn.Module):
    """KernelBench's recurrent tasks in small: a stacked layer, then a Linear on the last step's output."""

    def __init__(self, layer: type[nn.RNNBase], **options: Any) -> None:
        super().__init__()
        self.rnn = layer(16, 32, num_layers=2, **options)
        self.head = nn.Linear(32 * (2 if options.get("bidirectional") else 1), 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1] if self.rnn.batch_first else out[-1])


@pytest.mark.parametrize("layer,options", [
    (nn.LSTM, {}), (nn.GRU, {"batch_first": True, "bidirectional": True}), (nn.RNN, {"nonlinearity": "relu"}),
])  # fmt: skip
def test_recurrent_layers_have_a_truth_on_their_own_path(layer: type[nn.RNNBase], options: dict[str, Any]) -> None:
    """nn.LSTM/GRU/RNN pick a library path (oneDNN on a CPU: no float64 kernel; cuDNN on a GPU: reads the
    weights' storage as one buffer) that the truth cannot follow, which capped every kernel of KernelBench's
    LSTM and GRU tasks at reward 1. The truth runs them on PyTorch's own path (truth_recurrent.py): a truth
    every op of which has a rule, equal to the model evaluated in float64, and bounding its float32 reference;
    the process's library switches and the layer's forward are put back after. On a CPU only the LSTM takes
    oneDNN (GRU and RNN pass without the switch here); every one of them takes cuDNN on a GPU
    (tests/gpu/test_precision_gpu.py)."""
    torch.manual_seed(0)
    model = Recurrent(layer, **options).eval()
    x = torch.randn(4, 20, 16) if options.get("batch_first") else torch.randn(20, 4, 16)
    switches = torch.backends.cudnn.enabled, torch.backends.mkldnn.enabled
    truth_model = TruthModel(model)
    (truth,) = truth_model.outputs([x]) or [None]
    assert truth is not None, truth_model.problem
    assert not truth_model.unmodelled, truth_model.unmodelled
    assert (torch.backends.cudnn.enabled, torch.backends.mkldnn.enabled) == switches
    assert "forward" not in model.rnn.__dict__, "the layer's forward is its class's again"
    with torch.no_grad():
        ref = model(x)
        float64 = copy.deepcopy(model).double()(x.double())  # oneDNN takes only float32: own path here
        lowered = copy.deepcopy(model).half().float()(x.half().float())  # fp16 weights and inputs
    assert torch.allclose(truth.value, float64, rtol=1e-12, atol=1e-12)
    decided = judge_outputs([ref], [ref.clone()], Tolerance(), None, None, [truth], K)
    assert decided["match"] and decided["error_ratio"] < 1.0, decided
    refused = judge_outputs([ref], [lowered], Tolerance(), None, None, [truth], K)
    assert not refused["match"] and refused["kind"] == "precision", "the bound is no looser than float32's"


def test_the_library_switches_are_put_back_when_a_recurrent_forward_fails() -> None:
    """A forward that raises inside the layer (a 4-D input) leaves cuDNN and oneDNN as they were."""
    model = Recurrent(nn.LSTM).eval()
    switches = torch.backends.cudnn.enabled, torch.backends.mkldnn.enabled
    truth_model = TruthModel(model)
    assert truth_model.outputs([torch.randn(2, 20, 4, 16)]) is None and "LSTM" in truth_model.problem
    assert (torch.backends.cudnn.enabled, torch.backends.mkldnn.enabled) == switches
    assert "forward" not in model.rnn.__dict__


FROZEN_CHILD = """
import torch
from cuda_agent.judge.trusted.truth import TruthModel

torch.backends.disable_global_flags()  # what importing torch.testing._internal.common_utils does
model = torch.nn.LSTM(8, 16).eval()
truth_model = TruthModel(model)
truths = truth_model.outputs([torch.randn(5, 3, 8)])
assert truths is not None, truth_model.problem
assert torch.backends.flags_frozen() and torch.backends.cudnn.enabled and torch.backends.mkldnn.enabled
print("made")
"""


def test_recurrent_layers_get_a_truth_where_torch_froze_its_flags() -> None:
    """The switches go through the door torch's own `flags()` use (common/math_policy.py): with the flags
    frozen (a catalog crawl or a user's harness in the same process), a plain assignment raised and every
    recurrent layer lost its truth."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FROZEN_CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "made", done.stdout + done.stderr
