"""The float64 probe for global inputs (trusted/global_probe.py): a norm or a mean inside an output the size of
its input gets outliers, so a kernel that computes it from a sample is refused; local ops (elementwise, row
reductions, matmuls, convolutions) are left as they are. On the CPU, with the judge's own code."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_outlier_audit import Lambda

from cuda_agent.judge.candidate.inputs import draw_inputs, plant_outliers
from cuda_agent.judge.common import rounding_probe
from cuda_agent.judge.trusted import global_probe, outlier_audit, precision
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.judge.trusted.truth import TruthModel

TOL = Tolerance(1e-2, 1e-2)


def _draw(*shapes: tuple[int, ...], seed: int = 3, dtype: torch.dtype = torch.float32):
    def draw() -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        return [rounding_probe.settle(torch.rand(*shape, generator=generator) * 2 - 1).to(dtype) for shape in shapes]

    return draw


def frobenius(x: torch.Tensor) -> torch.Tensor:
    return x / torch.linalg.norm(x)


def test_a_norm_inside_an_output_the_size_of_its_input_is_global_and_a_sampled_norm_is_refused() -> None:
    """x / ||x||_F over 2^20 elements: one input element per output, so the count does not qualify it; the
    probe does, the search plants a magnitude, and on every planted draw the norm of every fourth row (times
    2) fails the precision audit while the full norm passes."""
    model = Lambda(frobenius)
    draw = _draw((1024, 1024))
    found = outlier_audit.audit(model, draw, TOL)
    assert found.per_output == {} and set(found.global_inputs) == {0}, found.report()
    assert found.global_inputs[0] > 0.9 and set(found.planted) == {0}, found.report()
    magnitude = found.planted[0]
    assert 8 <= magnitude <= 2**12, magnitude  # about sqrt(N / 32) times the rms: a few hundred
    assert found.report()["global"] == {"input 0": round(found.global_inputs[0], 4)}

    def audit(candidate: torch.Tensor, inputs: list[torch.Tensor]) -> bool:
        truth = TruthModel(model).outputs(inputs)[0]
        return precision.audit(candidate, model(*inputs), truth, 3.0).passed

    def relative_error(x: torch.Tensor) -> float:
        exact = x.double() / torch.linalg.norm(x.double())
        return float(((x / (torch.linalg.norm(x[::4]) * 2)).double() - exact).norm() / exact.norm())

    assert relative_error(draw()[0]) < 1e-3  # without outliers the sample is close (it passes from ~16M on)
    for seed in range(4):
        (x,) = planted = plant_outliers(draw(), seed, found.planted)
        sampled = x / (torch.linalg.norm(x[::4]) * 2)
        assert relative_error(x) > 1e-2, seed  # with them it misses or overcounts a share of the norm
        assert audit(model(*planted), planted) and not audit(sampled, planted), seed


def test_a_global_mean_subtracted_is_global() -> None:
    found = outlier_audit.audit(Lambda(lambda x: x - x.mean()), _draw((1 << 20,)), TOL)
    assert set(found.global_inputs) == {0} and set(found.planted) == {0}, found.report()


@pytest.mark.parametrize("op", ["relu", "row_sum", "row_softmax", "matmul", "conv3x3"])
def test_local_ops_are_not_global(op: str) -> None:
    """Three huge elements move three outputs (elementwise), their rows (row reductions, row softmax, a
    matmul's rows) or their neighbourhoods (a convolution, whose float32 algorithms spread a huge element's
    rounding over the image, which is why the probe is made on the float64 truth)."""
    weight = torch.randn(8, 16, 3, 3, generator=torch.Generator().manual_seed(1))
    cases = {
        "relu": (torch.relu, [(1 << 20,)]),
        "row_sum": (lambda x: x.sum(dim=1), [(256, 4096)]),
        "row_softmax": (lambda x: torch.softmax(x, dim=1), [(256, 4096)]),
        "matmul": (lambda a, b: a @ b, [(1024, 1024), (1024, 1024)]),
        "conv3x3": (lambda x: torch.nn.functional.conv2d(x, weight, padding=1), [(4, 16, 128, 128)]),
    }
    fn, shapes = cases[op]
    found = outlier_audit.audit(Lambda(fn), _draw(*shapes), TOL)
    assert found.global_inputs == {} and found.planted == {} and found.not_probed == {}, found.report()


def test_the_probe_reads_copies_of_the_held_set() -> None:
    """The held set is the caller's (an in-place task must not see a second forward on it)."""

    def in_place(x: torch.Tensor) -> torch.Tensor:
        return x.div_(torch.linalg.norm(x))

    held = _draw((1 << 20,))()
    kept = held[0].clone()
    share, why = global_probe.probe(TruthModel(Lambda(in_place)), held, 0, seed=5)
    assert why == "" and share is not None and share > 0.9
    assert torch.equal(held[0], kept)


def test_an_input_whose_dtype_cannot_hold_the_probe_is_reported_not_probed() -> None:
    found = outlier_audit.audit(Lambda(frobenius), _draw((1 << 20,), dtype=torch.float16), TOL)
    assert "cannot hold" in found.not_probed[0] and found.planted == {}, found.report()


def test_moved_share_counts_outputs_moved_by_their_own_share_and_zeros_at_a_floor() -> None:
    base = torch.tensor([1.0, 2.0, 0.0, 4.0])
    assert global_probe.moved_share([base], [base.clone()]) == 0.0
    assert global_probe.moved_share([base], [base * 1.05]) == 0.75  # the zero did not move
    assert global_probe.moved_share([base], [base * 1.04]) == 0.0  # below 3/64 of each
    bumped = base.clone()
    bumped[2] = 1.0  # a zero output that moved by far more than the floor
    assert global_probe.moved_share([base], [bumped]) == 0.25
    assert global_probe.moved_share([base], [torch.full((4,), float("nan"))]) == 1.0


TASK = '''
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x / torch.linalg.norm(x)


def get_inputs():
    return [torch.rand(256, 256) * 2 - 1]


def get_init_inputs():
    return []
'''


def test_the_reference_worker_plants_a_global_norm_and_refuses_a_sampled_one(
    cpu_reference, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the reference worker's preparation (the threshold lowered to this task's 65,536 elements): the
    report names the input global, both workers draw the outliers, the honest output matches and an output
    normalised by the norm of every fourth row does not."""
    from cuda_agent.judge.candidate.worker import InputSource
    from cuda_agent.judge.common import tensorfile

    monkeypatch.setattr(outlier_audit, "MIN_ELEMENTS_PER_OUTPUT", 1 << 16)
    task = tmp_path / "model.py"
    task.write_text(TASK)
    reply = cpu_reference.prepare(str(task), str(tmp_path), 1234, [11, 12, 13], 99, 1e-2, 1e-2)
    report = reply["outlier_audit"]
    assert set(report["global"]) == {"input 0"} and set(report["planted"]) == {"input 0"}, report
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    source = InputSource(str(task))
    source.transforms, source.signs = state["input_transforms"], state["input_signs"]
    source.outliers = state["input_outliers"]
    (x,) = source.get(11, None)
    tensorfile.save([x / torch.linalg.norm(x)], tmp_path / "out.tensors")
    assert cpu_reference.compare(0, str(tmp_path / "out.tensors"), 1e-2, 1e-2, aliases=[[]], precision_k=3.0)["match"]
    tensorfile.save([x / (torch.linalg.norm(x[::4]) * 2)], tmp_path / "out.tensors")
    verdict = cpu_reference.compare(0, str(tmp_path / "out.tensors"), 1e-2, 1e-2, aliases=[[]], precision_k=3.0)
    assert not verdict["match"], verdict
    unplanted = draw_inputs(cpu_reference.module, 11, device="cpu", transforms=cpu_reference.input_transforms,
                            signs=cpu_reference.signs.signs)
    assert not torch.equal(unplanted[0], x)  # the outliers are in the worker's draw


def test_the_audit_hands_back_the_truth_unpromoted_and_unplanned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe runs while the input audits hold their sets: the float64 copies of the parameters it made
    and the plan of rows it made from the free memory then are dropped, for the verification sets to make
    afresh (a plan from a fuller GPU would put a task that fits on blocks of rows)."""
    from cuda_agent.judge.trusted import truth_rows

    monkeypatch.setattr(truth_rows, "free_gpu_bytes", lambda inputs: 1 << 40)  # as a GPU would report
    class Normalised(torch.nn.Module):  # with a parameter, so that the truth promotes something
        def __init__(self) -> None:
            super().__init__()
            self.gain = torch.nn.Parameter(torch.full((1024,), 2.0))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.gain / torch.linalg.norm(x)

    model = Normalised()
    truth_model = TruthModel(model)
    seen = []
    outputs = truth_model.outputs

    def watched(inputs):
        made = outputs(inputs)
        seen.append((truth_model.planned, len(truth_model._state)))
        return made

    monkeypatch.setattr(truth_model, "outputs", watched)
    found = outlier_audit.audit(model, _draw((1024, 1024)), TOL, truth_model=truth_model)
    assert set(found.global_inputs) == {0}, found.report()
    assert seen and all(planned and promoted for planned, promoted in seen), seen  # during the probe
    assert not truth_model.planned and truth_model.rows is None and truth_model._state == {}
