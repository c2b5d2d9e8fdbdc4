"""Real nvcc/g++ builds of kernels/: a bundled example, the object cache, and compiler errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.judge.build import (
    BuildConfig,
    SubmissionError,
    build_extension,
    stage_submission,
    trim_compiler_output,
)

EXAMPLES = Path(__file__).parents[2] / "examples"

BROKEN_CU = """
#include <cuda_runtime.h>
__global__ void k(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = undeclared_value;
}
extern "C" void launch(float* out, int n, cudaStream_t s) { k<<<(n + 255) / 256, 256, 0, s>>>(out, n); }
"""


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("objects")


@pytest.mark.slow
def test_bundled_example_builds_imports_and_reuses_objects(tmp_path: Path, cache_dir: Path) -> None:
    config = BuildConfig(arch="9.0", cache_dir=cache_dir)
    kernels = EXAMPLES / "elementwise_chain" / "kernels"
    first = build_extension(kernels, tmp_path / "a", config)
    assert first.ok, first.full_log
    assert first.module_path is not None and first.module_path.name == "cuda_extension.so"
    assert "kernels/elementwise_chain.cu" in first.compiled
    # The module loads (CUDA libraries load lazily, so no GPU is needed) and registered its op.
    probe = (
        "import sys, torch; sys.path.insert(0, sys.argv[1]); import cuda_extension as m; "
        "print(sorted(n for n in dir(m) if not n.startswith('_')))"
    )
    listed = subprocess.run([sys.executable, "-c", probe, str(first.module_path.parent)],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "forward" in listed.stdout
    # Nothing changed: every object comes from the cache.
    second = build_extension(kernels, tmp_path / "b", config)
    assert second.ok and not second.compiled and len(second.cached) == len(first.compiled)
    # One .cu changed: only that file is recompiled.
    changed = tmp_path / "kernels"
    shutil.copytree(kernels, changed)
    cu = next(changed.glob("*.cu"))
    cu.write_text(cu.read_text() + "\n// touched\n")
    third = build_extension(changed, tmp_path / "c", config)
    assert third.ok and third.compiled == (f"kernels/{cu.name}",)


def test_compile_error_comes_back_trimmed_with_workspace_paths(tmp_path: Path, cache_dir: Path) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "broken.cu").write_text(BROKEN_CU)
    result = build_extension(kernels, tmp_path / "out", BuildConfig(arch="9.0", cache_dir=cache_dir))
    assert not result.ok and not result.timed_out
    assert "kernels/broken.cu(5)" in result.log
    assert "undeclared_value" in result.log
    assert "stage-" not in result.log  # staging paths are rewritten
    assert len(result.log.splitlines()) < 20


def test_submission_infrastructure_files_are_ignored(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "op.cu").write_text("// empty\n")
    (tmp_path / "binding.cpp").write_text("#error tampered\n")
    stage = tmp_path / "stage"
    sources = stage_submission(kernels, stage)
    assert (stage / "binding.cpp").read_text().startswith("// binding.cpp -- fixed infrastructure")
    assert [s.name for s in sources] == ["binding.cpp", "op.cu"]


def test_bad_kernels_folders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match="no kernels/"):
        stage_submission(tmp_path / "missing", tmp_path / "s1")
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "notes.txt").write_text("nothing to build")
    with pytest.raises(SubmissionError, match=r"no \.cu"):
        stage_submission(kernels, tmp_path / "s2")
    (kernels / "link.cu").symlink_to("/etc/passwd")
    with pytest.raises(SubmissionError, match="symbolic link"):
        stage_submission(kernels, tmp_path / "s3")


def test_trim_keeps_errors_and_caps_length() -> None:
    noise = [f"note: instantiated from here {i}" for i in range(500)]
    text = "\n".join([*noise, "a.cu(3): error: identifier x is undefined", "   x = 1;", "   ^"])
    trimmed = trim_compiler_output(text)
    assert trimmed[0] == "a.cu(3): error: identifier x is undefined"
    assert len(trimmed) <= 61
