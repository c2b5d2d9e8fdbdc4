"""The reference worker's torch.compile builds (trusted/reference_worker.py) each get kernels of their own.

With inductor's in-memory code cache left alone, a build whose generated source matched an earlier build's
was handed the earlier build's module, so the builds shared their kernels and the last build's autotuning
decided the "fastest" build's time too (H200: builds timed 0.0707 and 0.0825 ms, baseline 0.0824). Runs
on the CPU (inductor generates and loads C++ kernels through the same code cache) and, marked, on the GPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def _loaded_modules() -> set[int]:
    from torch._inductor.codecache import PyCodeCache

    modules = PyCodeCache.modules  # a list in recent torch, a dict before
    return {id(m) for m in (modules.values() if isinstance(modules, dict) else modules)}


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_each_build_loads_its_own_kernels_and_earlier_builds_stay_valid(device: str) -> None:
    """On the GPU the kernels are Triton's, each autotuned by its own build."""
    from cuda_agent.judge.trusted.reference_worker import compile_build, fresh_compiles

    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU (no CUDA GPU is visible here)")
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU()).to(device).eval()
    x = torch.randn(4, 16, device=device)
    fresh_compiles()
    first = compile_build(model, 0)
    with torch.no_grad():
        first(x)
    loaded_first = _loaded_modules()
    second = compile_build(model, 1)
    with torch.no_grad():
        out_second = second(x)
    loaded_second = _loaded_modules()
    assert loaded_first and loaded_second, "inductor loaded no generated module"
    assert not loaded_first & loaded_second, "the second build was handed the first build's kernels"
    with torch.no_grad():
        expected = model(x)
        torch.testing.assert_close(first(x), expected)
    torch.testing.assert_close(out_second, expected)
