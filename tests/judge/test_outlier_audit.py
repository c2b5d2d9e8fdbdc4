"""The outlier audit (trusted/outlier_audit.py): an input that a global loss reduces gets a few large elements
in every draw, so a kernel that reads a sample of it is refused; inputs that each output reads few of, and
elements the loss does not follow, are left as they are. On the CPU, with the judge's own code."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cuda_agent.judge.candidate.inputs import (
    OUTLIERS_PER_INPUT,
    draw_inputs,
    fingerprint,
    outlier_factors,
    outlier_positions,
    plant_outliers,
)
from cuda_agent.judge.common import rounding_probe
from cuda_agent.judge.trusted import outlier_audit, precision
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.judge.trusted.truth import TruthModel

TOL = Tolerance(1e-2, 1e-2)


class Lambda(torch.nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def _draw(*shapes: tuple[int, ...], seed: int = 3):
    def draw() -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        return [rounding_probe.settle(torch.rand(*shape, generator=generator) * 2 - 1) for shape in shapes]

    return draw


def test_positions_are_distinct_reproducible_and_planting_keeps_signs_and_layout_out_of_place() -> None:
    assert outlier_positions(5, 0, 1000) == outlier_positions(5, 0, 1000)
    assert outlier_positions(5, 0, 1000) != outlier_positions(6, 0, 1000)
    assert len(set(outlier_positions(5, 1, 3))) == 3 and outlier_positions(5, 1, 2) in ([0, 1], [1, 0])
    x = rounding_probe.settle(torch.rand(64, 32).t() * 2 - 1)  # a transposed layout, both signs
    planted = plant_outliers([x], 9, {0: 1024.0})[0]
    assert planted.stride() == x.stride() and planted is not x
    changed = (planted != x).nonzero()
    assert len(changed) == OUTLIERS_PER_INPUT
    flat = sorted(int(r) * 64 + int(c) for r, c in changed)  # x is 32 x 64: logical index r * 64 + c
    assert flat == sorted(outlier_positions(9, 0, x.numel()))
    factors = outlier_factors(9, 0, OUTLIERS_PER_INPUT)
    assert all(f in {1 + k / 8 for k in range(8)} for f in factors) and factors == outlier_factors(9, 0, 3)
    for flat_index, factor in zip(outlier_positions(9, 0, x.numel()), factors, strict=True):
        r, c = divmod(flat_index, 64)  # each outlier gets its own factor, its sign kept
        assert float(planted[r, c]) == 1024.0 * factor * float(x[r, c].sign()), (flat_index, factor)
    exact = plant_outliers([x], 9, {0: 1024.0}, spread=False)[0]
    assert torch.equal(exact[exact != x].abs(), torch.full((OUTLIERS_PER_INPUT,), 1024.0))


def test_a_global_loss_gets_outliers_that_move_it_and_a_sample_misses_them() -> None:
    """MSELoss over 2^20 elements: each outlier moves the loss by at least 1/64; the loss of every fourth
    row fails the judge's precision audit on every planted draw (a count of 6 outliers read 4 times over
    cannot come out right), and the honest loss passes it."""
    mse = Lambda(lambda p, t: torch.mean((p - t) ** 2))
    draw = _draw((1024, 1024), (1024, 1024))
    found = outlier_audit.audit(mse, draw, TOL)
    assert set(found.planted) == {0, 1} and found.per_output == {0: 1 << 20, 1: 1 << 20}, found.report()
    magnitude = found.planted[0]
    assert magnitude == 2 ** round(torch.log2(torch.tensor(magnitude)).item()) and 64 <= magnitude <= 1024, magnitude

    def sampled(p, t):
        return torch.mean((p[::4] - t[::4]) ** 2)

    def audit(candidate, inputs) -> bool:
        reference = mse(*inputs)
        truth = TruthModel(mse).outputs(inputs)[0]
        return precision.audit(candidate.reshape(reference.shape), reference, truth, 3.0).passed

    plain = draw()
    for seed in range(6):
        planted = plant_outliers(draw(), seed, found.planted)
        shift = abs(float(mse(*planted)) / float(mse(*plain)) - 1)
        assert shift >= 6 / 64 * 0.9, shift  # six outliers, each about 1/64
        assert audit(mse(*planted), planted) and not audit(sampled(*planted), planted), seed


def _serial_fp32_mean(terms: torch.Tensor, per_thread: int) -> torch.Tensor:
    """A GPU kernel's honest order at its least accurate: each thread a running fp32 sum of `per_thread`
    terms in order, then the threads' partials added one by one (an atomicAdd's order), in fp32 throughout
    (numpy's cumsum is sequential in the array's dtype; torch's accumulates a float in double on the CPU)."""
    import numpy as np

    partials = np.cumsum(terms.reshape(-1, per_thread).numpy(), axis=1, dtype=np.float32)[:, -1]
    return torch.tensor(np.cumsum(partials, dtype=np.float32)[-1] / np.float32(terms.numel()))


@pytest.mark.parametrize("loss", ["mse", "huber"])
def test_honest_serial_fp32_orders_pass_with_the_outliers(loss: str) -> None:
    """An outlier sits in one thread's running sum and swallows the small terms added after it (their
    rounding at its ulp): the precision audit must still accept that order, for a square and a linear loss."""
    fns = {"mse": lambda p, t: torch.mean((p - t) ** 2), "huber": torch.nn.functional.smooth_l1_loss}
    model = Lambda(fns[loss])
    draw = _draw((1024, 1024), (1024, 1024))
    found = outlier_audit.audit(model, draw, TOL)
    assert set(found.planted) == {0, 1}, found.report()
    for seed in range(3):
        p, t = plant_outliers(draw(), seed, found.planted)
        d = p - t
        terms = d * d if loss == "mse" else torch.where(d.abs() < 1, 0.5 * d * d, d.abs() - 0.5)
        reference = model(p, t)
        truth = TruthModel(model).outputs([p, t])[0]
        for per_thread in (256, 65536):
            honest = _serial_fp32_mean(terms, per_thread).reshape(reference.shape)
            assert precision.audit(honest, reference, truth, 3.0).passed, (loss, seed, per_thread)


def test_a_global_maximum_is_not_the_same_on_every_draw() -> None:
    """max|x| over 2^20 elements: the outliers become the maximum. With one fixed magnitude the output was
    that magnitude on every draw, which a kernel could return without reading x; each draw's factors (from
    its seed) make it differ from draw to draw, and both workers compute the same factors."""
    absmax = Lambda(lambda x: x.abs().max())
    draw = _draw((1 << 20,))
    found = outlier_audit.audit(absmax, draw, TOL)
    magnitude = found.planted[0]
    seen = set()
    for seed in range(8):
        (x,) = plant_outliers(draw(), seed, found.planted)
        assert float(absmax(x)) == magnitude * max(outlier_factors(seed, 0, OUTLIERS_PER_INPUT)), seed
        seen.add(float(absmax(x)))
    assert len(seen) >= 3, seen
    (fixed,) = plant_outliers(draw(), 0, found.planted, spread=False)
    assert float(absmax(fixed)) == magnitude  # what every draw gave before the factors


def test_a_linear_sum_gets_a_larger_magnitude_than_a_square() -> None:
    draw = _draw((1 << 20,))
    square = outlier_audit.audit(Lambda(lambda x: (x * x).sum()), draw, TOL).planted[0]
    linear = outlier_audit.audit(Lambda(lambda x: (x + 2).sum()), draw, TOL).planted[0]
    assert linear >= square * 64, (linear, square)


def test_inputs_each_output_reads_few_of_are_not_planted() -> None:
    """Elementwise ops, row reductions, row softmax and matmuls read far fewer than 2^20 inputs per output."""
    for fn, shapes in ((torch.relu, [(1 << 20,)]), (lambda x: x.sum(dim=1), [(256, 4096)]),
                       (lambda x: torch.softmax(x, dim=1), [(256, 4096)]),
                       (lambda a, b: a @ b, [(1024, 1024), (1024, 1024)])):  # fmt: skip
        found = outlier_audit.audit(Lambda(fn), _draw(*shapes), TOL)
        assert found.planted == {} and found.per_output == {}, found.report()


def test_an_element_the_loss_does_not_follow_is_left_as_it_is_and_the_report_says_why() -> None:
    """A hinge clamps every term of these inputs to zero however large: nothing to plant."""
    hinge = Lambda(lambda x: torch.clamp(-1.0 - x.abs(), min=0).mean())
    found = outlier_audit.audit(hinge, _draw((1 << 20,)), TOL)
    assert found.planted == {} and "no power of two up to 2^64" in found.refused[0], found.report()
    overflow = Lambda(lambda x: torch.exp(x.abs() * 60).mean())  # finite as drawn, inf once scaled up a little
    found = outlier_audit.audit(overflow, _draw((1 << 20,)), TOL)
    assert found.planted == {} and "not finite" in found.refused[0], found.report()


def test_the_threshold_follows_the_outputs_size() -> None:
    """The count alone (the global probe off): two means of 2^19 elements each fall short of 2^20 per output,
    and qualify at a threshold of 2^19. With the probe on, the three elements move both means, so the input
    is global and planted anyway (test_global_probe.py)."""
    draw = _draw((1 << 20,))
    two_means = Lambda(lambda x: x.view(2, -1).mean(dim=1))
    counted = outlier_audit.audit(two_means, draw, TOL, probe_global=False)
    assert counted.planted == {} and counted.per_output == {}, counted.report()
    assert outlier_audit.audit(two_means, draw, TOL, min_per_output=1 << 19, probe_global=False).per_output == {0: 1 << 19}
    probed = outlier_audit.audit(two_means, draw, TOL)
    assert set(probed.global_inputs) == {0} and set(probed.planted) == {0}, probed.report()


TASK = '''
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    return [torch.rand(256, 256) * 2 - 1, torch.rand(256, 256) * 2 - 1]


def get_init_inputs():
    return []
'''


def test_both_workers_draw_the_planted_inputs_and_a_kernel_that_skips_them_is_refused(
    cpu_reference, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference worker's preparation plans the outliers (the threshold lowered to this small task's
    65,536 elements), hands them to the candidate worker in state.pt, and both draw the same inputs; the
    honest loss passes, the loss with the outliers left unscaled (a kernel that sampled around them) fails."""
    from cuda_agent.judge.candidate.worker import InputSource
    from cuda_agent.judge.common import tensorfile

    monkeypatch.setattr(outlier_audit, "MIN_ELEMENTS_PER_OUTPUT", 1 << 16)
    task = tmp_path / "model.py"
    task.write_text(TASK)
    reply = cpu_reference.prepare(str(task), str(tmp_path), 1234, [11, 12, 13], 99, 1e-2, 1e-2)
    planted = reply["outlier_audit"]["planted"]
    assert set(planted) == {"input 0", "input 1"}, reply["outlier_audit"]
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    source = InputSource(str(task))
    source.transforms, source.signs = state["input_transforms"], state["input_signs"]
    source.outliers = state["input_outliers"]
    assert [fingerprint(source.get(seed, None)) for seed in (11, 12, 13)] == reply["input_prints"]
    p, t = source.get(11, None)
    tensorfile.save([torch.mean((p - t) ** 2)], tmp_path / "out.tensors")
    assert cpu_reference.compare(0, str(tmp_path / "out.tensors"), 1e-2, 1e-2, aliases=[[]], precision_k=3.0)["match"]
    unplanted = draw_inputs(cpu_reference.module, 11, device="cpu", transforms=cpu_reference.input_transforms,
                            signs=cpu_reference.signs.signs)
    skipped = torch.mean((unplanted[0] - unplanted[1]) ** 2)
    tensorfile.save([skipped], tmp_path / "out.tensors")
    verdict = cpu_reference.compare(0, str(tmp_path / "out.tensors"), 1e-2, 1e-2, aliases=[[]], precision_k=3.0)
    assert not verdict["match"], verdict
    # Without the input audit nothing is planted.
    reply = cpu_reference.prepare(str(task), str(tmp_path), 1234, [11, 12, 13], 99, 1e-2, 1e-2, audit_inputs=False)
    assert reply["outlier_audit"]["planted"] == {} and torch.load(tmp_path / "state.pt")["input_outliers"] is None


def test_a_task_whose_inputs_are_all_small_costs_no_forward_and_a_held_set_no_draw() -> None:
    def refuse(*inputs):
        raise AssertionError("no forward was needed")

    assert outlier_audit.audit(Lambda(refuse), _draw((1000, 1000)), TOL).per_output == {}  # under 2^20 elements
    draws = []

    def counted():
        draws.append(1)
        return _draw((1 << 20,))()

    held = _draw((1 << 20,))()
    assert outlier_audit.audit(Lambda(torch.relu), counted, TOL, first=held).per_output == {}
    assert draws == [], "the held set counts the outputs; an elementwise task draws nothing more"


def test_the_offline_degeneracy_audit_draws_as_the_judge_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """scripts/kernelbench_degeneracy.py's audit (degeneracy.audit_task) plants the outliers the judge would,
    so its verdict on a global loss is the judge's."""
    from cuda_agent.judge.trusted.degeneracy import audit_task
    from cuda_agent.task import Task, import_task_module

    monkeypatch.setattr(outlier_audit, "MIN_ELEMENTS_PER_OUTPUT", 1 << 16)
    # a scale per draw, as KernelBench's losses have: without one every draw's loss is about 2/3 and the
    # task is degenerate (a constant passes), outliers or not
    scaled = TASK.replace("return [torch.rand(256, 256) * 2 - 1,", "return [(torch.rand(256, 256) * 2 - 1) * (0.3 + 2 * torch.rand(())),")
    assert scaled != TASK
    module = import_task_module(Task(name="mse", source=scaled, path=Path("mse.py")), "outlier_offline_mse")
    found = audit_task(module, "mse", [3, 4, 5], TOL, device="cpu")
    assert set(found.outlier_audit["planted"]) == {"input 0", "input 1"}, found.outlier_audit
    assert found.degenerate == [], found.per_set
