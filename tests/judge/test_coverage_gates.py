"""The coverage gates of Judgment (decide/coverage_stage.py) against scripted replies (issue 12, class 3):
every verification call is traced, and timed rounds chosen at random after their draw too
(test_traced_rounds.py); the parent classifies what ran against the kernels it read from the built
binary, so a submission honest only on the calls that used to be looked at is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.judgment import Judgment, Stop
from cuda_agent.judge.trusted.device_code import normalise
from cuda_agent.judge.trusted.library_kernels import KernelLists
from cuda_agent.task import Task

pytestmark = pytest.mark.usefixtures("candidate_holds_nothing")  # conftest.py: the memory check at rest passes

OURS = "void ew_kernel<4>(float const*, float*, long)"
ATEN = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, float*)"
GEMM = "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma"


def judgment(tmp_path: Path, ops: set[str], imports: dict[str, set[str]] | None = None) -> Judgment:
    made = Judgment(tmp_path, Task(name="t", source="", path=tmp_path / "model.py"),
                    JudgeConfig(scratch_dir=tmp_path / "scratch"))  # fmt: skip
    made.kernel_names = {OURS}
    # PyTorch's and cuBLAS's kernels as their binaries list them (test_what_runs.py reads the real ones)
    made._coverage_lists = KernelLists(torch=frozenset({normalise(ATEN)}),  # type: ignore[attr-defined]
                                       libraries={"cublas": frozenset({normalise(GEMM)})})  # fmt: skip
    made.reference_ops = ops
    made.imports = imports or {"kernels/ew.cu": {"__cudaLaunchKernel"}}
    made.check_round = lambda ref, cand: None  # type: ignore[method-assign]  (outputs: another test's job)
    return made


def test_verification_calls_are_all_counted(tmp_path: Path) -> None:
    made = judgment(tmp_path, {"gelu"})
    made.check_coverage([{OURS: 100.0}] * 5)
    assert made.checks["coverage"]["calls_profiled"] == 5
    with pytest.raises(Stop) as stopped:  # honest on five calls, ATen on the sixth: counted
        made.check_coverage([{OURS: 10.0}] * 5 + [{ATEN: 400.0}])
    assert stopped.value.verdict.status.value == "rejected" and "GeluCUDAKernelImpl" in stopped.value.verdict.reason


@pytest.mark.parametrize(
    ("ran", "refused"),
    [
        ({OURS: 50.0, "Memcpy DtoD (Device -> Device)": 5.0, "judge_pad_flush": 40.0}, None),
        ({ATEN: 50.0, "judge_pad_flush": 40.0}, "ran none of your kernels"),  # ATen on timed calls
        ({"judge_pad_flush": 40.0}, "ran none of your kernels"),  # nothing on timed calls
        ({OURS: 5.0, ATEN: 50.0}, "timed calls' GPU time"),
    ],
)
def test_a_traced_round_of_timed_calls_is_gated(tmp_path: Path, ran: dict[str, float], refused: str | None) -> None:
    made = judgment(tmp_path, {"gelu"})
    reply = {"ok": True, "samples": [0.1] * 10, "kernels": ran}
    if refused is None:
        made.gate_timed_round(reply, 10)
        assert made.checks["coverage_timed"]["calls_profiled"] == 10
    else:
        with pytest.raises(Stop) as stopped:
            made.gate_timed_round(reply, 10)
        assert refused in stopped.value.verdict.reason, stopped.value.verdict.reason


def test_cublas_kernels_are_the_candidates_only_if_it_calls_cublas(tmp_path: Path) -> None:
    own = judgment(tmp_path, {"addmm"}, {"kernels/g.cpp": {"cublasSgemm_v2"}})
    own.check_coverage([{GEMM: 100.0, OURS: 5.0}])
    by_aten = judgment(tmp_path, {"addmm"}, {"kernels/g.cu": {"__cudaLaunchKernel"}})
    with pytest.raises(Stop):
        by_aten.check_coverage([{GEMM: 100.0, OURS: 5.0}])
