"""GPU tests of issue 33 (honest idioms the name rules refused) and issue 35 class 9 (math flags).

- The honest cases of both issues are accepted by the whole judge, with their precision within K.
- The two accurate-math cases, built with the old forced --use_fast_math, are refused by the precision
  audit: the flag, not the kernel, was what failed them.
- The judge's driver gate on a real driver: cuTensorMapEncodeTiled comes back usable, cuCtxCreate (a name
  built at run time) does not, cudaSetDevice passes for the current device; CUB, thrust and a cooperative
  launch built by the judge compute the right answers.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted.build import BuildConfig, build_extension

ROOT = Path(__file__).parents[2]
SUITE = ROOT / "tests" / "adversarial"
pytestmark = pytest.mark.gpu

HONEST = (
    "00_honest_reshape_in_binding",
    "00_honest_memcpy2d_default_roll",
    "00_honest_forward_declared_static",
    "00_honest_extension_fn_named_add",
    "00_honest_static_scratch_workspace",
    "00_honest_cooperative_grid_sync",
    "00_honest_accurate_sin_large_args",
    "00_honest_accurate_sincos_rotation",
)
ACCURATE_MATH = ("00_honest_accurate_sin_large_args", "00_honest_accurate_sincos_rotation")


def _judge(cases: list[Path], config: JudgeConfig) -> dict[str, dict]:
    from cuda_agent.judge.decide.service import JudgeService

    judged: dict[str, dict] = {}
    with JudgeService(config) as service:
        for i, verdict in service.judge_many(cases):
            v = judged[cases[i].name] = verdict.to_dict()
            print(f"{cases[i].name:40s} {v['status']:14s} {v['reward']:+d} {v['reason'][:150]}", flush=True)
    return judged


@pytest.fixture(scope="module")
def verdicts() -> dict[str, dict]:
    config = JudgeConfig(forward_timeout_s=30.0, build=BuildConfig(arch="9.0", compile_timeout_s=120.0))
    return _judge([SUITE / name for name in HONEST], config)


@pytest.mark.parametrize("name", HONEST)
def test_honest_case_is_accepted(verdicts: dict[str, dict], name: str) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "gpu"))
    from test_judge_gpu import meets

    verdict = verdicts[name]
    expected = json.loads((SUITE / name / "expected.json").read_text())
    assert meets(expected, verdict), f"{verdict['status']} {verdict['reward']}: {verdict['reason']}"
    ratio = verdict["checks"].get("precision_error_ratio")
    assert ratio is not None and 0 <= ratio < JudgeConfig().precision_k, verdict["checks"].get("precision_audit")
    if name in ACCURATE_MATH:
        assert ratio < 4, ratio  # sinf/sincosf as accurate as PyTorch's


def test_the_old_forced_fast_math_fails_the_accurate_math_cases() -> None:
    config = JudgeConfig(forward_timeout_s=30.0, time_candidate=False,
                         build=BuildConfig(arch="9.0", compile_timeout_s=120.0, fast_math=True))  # fmt: skip
    judged = _judge([SUITE / name for name in ACCURATE_MATH], config)
    for name in ACCURATE_MATH:
        assert judged[name]["reward"] == -1 and "precision audit" in judged[name]["reason"], judged[name]["reason"]


def test_driver_gate_cub_thrust_and_cooperative_launch_on_the_gpu(tmp_path: Path) -> None:
    import torch

    sys.path.insert(0, str(ROOT / "tests" / "judge"))
    from test_library_and_binding_rules import BLAS_CPP, IDIOMS_CU

    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "idioms.cu").write_text(IDIOMS_CU)
    (kernels / "blas.cpp").write_text(BLAS_CPP)
    built = build_extension(kernels, tmp_path / "out", BuildConfig(arch="9.0"))
    assert built.ok, built.log
    torch.cuda.init()
    lib = ctypes.CDLL(str(built.module_path))
    # the gate: allowed name through to the driver, refused ones never reach it
    assert lib.probe_tensor_map() == 0  # cudaSuccess: cuTensorMapEncodeTiled found
    assert lib.probe_built_name() == 800  # "cuCtxCreate", built at run time: cudaErrorNotPermitted
    assert lib.probe_set_device(torch.cuda.current_device()) == 0
    assert lib.probe_set_device(torch.cuda.current_device() + 1) == 800
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    ptr = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731
    # CUB with caller-owned temp storage on the current stream
    n = 1 << 20
    x = torch.rand(n, device="cuda")
    y = torch.empty_like(x)
    lib.scan_bytes.restype = ctypes.c_size_t
    size = lib.scan_bytes(ctypes.c_int(n))
    temp = torch.empty(max(int(size), 1), dtype=torch.uint8, device="cuda")
    assert lib.scan(ptr(temp), ctypes.c_size_t(size), ptr(x), ptr(y), ctypes.c_int(n), stream) == 0
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.cumsum(x.double(), 0).float(), rtol=1e-4, atol=1e-2)
    # thrust's default policy
    lib.squares(ptr(x), ptr(y), ctypes.c_long(n))
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x * x)
    # a cooperative launch with grid.sync()
    z = x.clone()
    assert lib.cooperative(ptr(z), ctypes.c_int(n), stream) == 0
    torch.cuda.synchronize()
    torch.testing.assert_close(z, (x + 1) * 2)
