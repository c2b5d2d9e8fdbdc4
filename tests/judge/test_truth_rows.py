"""The float64 truth of a block of the batch, where the whole batch's runs out of memory (truth_rows.py).

KernelBench's Softsign needed 146 GiB for its whole-batch truth on a 141 GB H200, so the audit had no truth
and the reward was capped. Here the memory limit is simulated (an out-of-memory error above a number of
rows), and everything else is the real code: the halving, the secret block, its check against the
reference's full-batch output, and the precision audit on those rows."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted import truth as truth_module
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.judge.trusted.output_verdict import judge_outputs
from cuda_agent.judge.trusted.truth import NAME, TruthModel

K = JudgeConfig().precision_k
TOL = Tolerance(1e-2, 1e-2)


class RowWise(nn.Module):
    """A long reduction per row: each row's output depends on that row alone."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2048, 16) / 45)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.weight)


class AcrossBatch(nn.Module):
    """Centred over the batch (as a batch norm is): a block of rows alone has another mean."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - x.mean(0, keepdim=True)


@pytest.fixture
def memory_for(monkeypatch: pytest.MonkeyPatch):
    """Make the truth run out of memory above `rows` rows of the batch."""

    def limit(rows: int) -> list[int]:
        tried: list[int] = []
        real = TruthModel._outputs

        def outputs(self: TruthModel, inputs: list, block: tuple[int, int] | None) -> list:
            tried.append(int(inputs[0].shape[0]))
            if inputs[0].shape[0] > rows:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 146.00 GiB")
            return real(self, inputs, block)

        monkeypatch.setattr(truth_module.TruthModel, "_outputs", outputs)
        return tried

    return limit


def tf32(t: torch.Tensor) -> torch.Tensor:
    m, e = torch.frexp(t.double())
    return torch.ldexp(torch.round(m * 2.0**11) / 2.0**11, e).float()


def test_a_truth_too_large_for_memory_is_made_on_a_secret_block_of_rows_and_still_audits(memory_for) -> None:
    torch.manual_seed(0)
    model, x = RowWise(), torch.randn(64, 2048)
    tried = memory_for(10)
    exact = TruthModel(model)
    truths = exact.outputs([x])
    assert truths is not None and tried == [64, 32, 16, 8], "halved until a block fits"
    start, stop = truths[0].rows
    assert stop - start == 8 and truths[0].value.shape == (8, 16)
    with torch.no_grad():
        reference = model(x)
    assert exact.confirm(truths, [reference], TOL, [x]) is truths and exact.separable
    assert exact.name.startswith(NAME) and "blocks of 8 rows" in exact.name
    honest = judge_outputs([reference], [reference.clone()], TOL, None, None, truths, K)
    assert honest["match"] and honest["error_ratio"] is not None
    with torch.no_grad():
        lowered = torch.tanh(tf32(x) @ tf32(model.weight))  # TF32 operands on every row
    assert (lowered - reference).abs().max() < 1e-2, "within the tolerance: only the audit can see it"
    caught = judge_outputs([reference], [lowered], TOL, None, None, truths, K)
    assert not caught["match"] and caught["kind"] == "precision"
    # The block is drawn afresh for every call: a candidate cannot know which rows are audited.
    starts = {exact.outputs([x])[0].rows[0] for _ in range(12)}
    assert len(starts) > 1


def test_a_block_truth_of_a_model_whose_batch_elements_interact_is_refused(memory_for) -> None:
    torch.manual_seed(1)
    model, x = AcrossBatch(), torch.randn(64, 32)
    memory_for(20)
    exact = TruthModel(model)
    truths = exact.outputs([x])
    assert truths is not None and truths[0].rows is not None
    with torch.no_grad():
        reference = model(x)
    assert exact.confirm(truths, [reference], TOL, [x]) is None, "the whole batch's truth does not fit either"
    assert "does not fit in memory" in exact.problem and "interact" in exact.problem
    assert exact.outputs([x]) is None, "no more blocks for this model: they do not stand for their rows"


def test_a_planned_block_that_does_not_stand_for_its_rows_gives_way_to_the_whole_batch() -> None:
    """The plan is an estimate: where it chose a block for a model whose batch elements interact and the
    whole batch's truth fits after all, the judgment gets the whole batch's truth, not none."""
    torch.manual_seed(4)
    model, x = AcrossBatch(), torch.randn(64, 32)
    exact = TruthModel(model)
    exact.planned, exact.rows = True, 16  # as the plan would leave it for a large task
    truths = exact.outputs([x])
    assert truths is not None and truths[0].rows is not None
    with torch.no_grad():
        reference = model(x)
    whole = exact.confirm(truths, [reference], TOL, [x])
    assert whole is not None and whole[0].rows is None and exact.separable is False and exact.rows is None
    assert torch.allclose(whole[0].value, reference.double(), rtol=1e-5, atol=1e-6)


class HingeShaped(nn.Module):
    """KernelBench's HingeLoss: predictions N x N times targets of N, which broadcast along the columns."""

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def test_a_block_the_model_cannot_take_gives_way_to_the_whole_batch() -> None:
    """The targets are as long as the batch, so a block cuts them too, and the block's forward fails on the
    shapes: that is no reason to have no truth. Blocks go off for the model and the whole batch's truth
    is made (it fits here; where it does not, the out-of-memory reason is given)."""
    torch.manual_seed(5)
    predictions, targets = torch.rand(64, 64), torch.randint(0, 2, (64,)).float() * 2 - 1
    exact = TruthModel(HingeShaped())
    exact.planned, exact.rows = True, 16  # as the plan leaves it for KernelBench's size
    truths = exact.outputs([predictions, targets])
    assert truths is not None and truths[0].rows is None, exact.problem
    assert exact.separable is False and exact.rows is None
    expected = torch.mean(torch.clamp(1 - predictions.double() * targets.double(), min=0))
    assert torch.allclose(truths[0].value, expected, rtol=1e-12, atol=0)


def test_no_block_fits_gives_no_truth_and_says_why(memory_for) -> None:
    memory_for(0)
    exact = TruthModel(RowWise())
    assert exact.outputs([torch.randn(16, 2048)]) is None
    assert exact.problem.startswith("OutOfMemoryError")


def test_a_whole_batch_truth_needs_no_confirmation() -> None:
    torch.manual_seed(2)
    model, x = RowWise(), torch.randn(8, 2048)
    exact = TruthModel(model)
    truths = exact.outputs([x])
    assert truths is not None and truths[0].rows is None and exact.name == NAME
    assert exact.confirm(truths, [torch.zeros(8, 16)], TOL, [x]) is truths


def test_the_block_is_planned_from_the_inputs_size_and_the_free_memory() -> None:
    """KernelBench's Softsign: 4096 x 393216 float32 (6 GiB) with 127 GiB free needs a block, planned so
    that the truth's float64 copies take at most half of what is free; a small task needs none."""
    from cuda_agent.judge.trusted import truth_rows

    x = torch.empty(4096, 393216, device="meta")
    rows = truth_rows.planned_rows([x], 4096, 127 << 30)
    assert rows is not None and 0 < rows < 4096
    assert truth_rows.COPIES * 8 * rows * 393216 <= truth_rows.SHARE * (127 << 30)
    assert truth_rows.planned_rows([torch.empty(64, 2048, device="meta")], 64, 127 << 30) is None
    assert truth_rows.planned_rows([torch.empty(64, dtype=torch.int64, device="meta")], 64, 1) is None
    assert truth_rows.free_gpu_bytes([torch.randn(4)]) is None, "CPU inputs: nothing to plan"


def test_rows_lowered_to_tf32_are_caught_wherever_the_secret_block_falls(memory_for) -> None:
    """A kernel that keeps fp32 on some rows and uses TF32 on the others, betting that the audit's block
    misses them: every other row lowered is caught on every block, and a contiguous half on the blocks
    that reach it (in proportion to the rows it lowers: the block's offset is secret, so no layout wins)."""
    torch.manual_seed(3)
    model, x = RowWise(), torch.randn(64, 2048)
    memory_for(10)
    exact = TruthModel(model)
    with torch.no_grad():
        reference = model(x)
        lowered = torch.tanh(tf32(x) @ tf32(model.weight))
    interleaved = reference.clone()
    interleaved[::2] = lowered[::2]
    half = reference.clone()
    half[32:] = lowered[32:]
    caught_interleaved, caught_half, reached_half = 0, 0, 0
    for _ in range(40):
        truths = exact.outputs([x])
        stop = truths[0].rows[1]
        caught_interleaved += not judge_outputs([reference], [interleaved], TOL, None, None, truths, K)["match"]
        if stop > 32:  # the block holds lowered rows
            reached_half += 1
            caught_half += not judge_outputs([reference], [half], TOL, None, None, truths, K)["match"]
        else:
            assert judge_outputs([reference], [half], TOL, None, None, truths, K)["match"]
    assert caught_interleaved == 40
    assert reached_half > 0 and caught_half >= reached_half - 2, (caught_half, reached_half)
