"""Kernel attribution from the built binary (issue 12): the names come from the cubins nvcc embedded, so
macros, .inc bodies and declarator order cannot hide a kernel, and comments cannot invent one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cuda_agent.judge.decide.coverage import binary_attribution, coverage_report
from cuda_agent.judge.trusted.device_code import (
    imported_symbols,
    kernels,
    normalise,
    qualified_name,
    reserved_kernels,
)
from cuda_agent.judge.trusted.library_kernels import KernelLists

SOURCE = r"""
#include <cuda_runtime.h>
#define KERNEL(name) name##_kernel
__global__ void KERNEL(scale)(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2.f; }
__global__ __launch_bounds__(256) void bounds_first(float* x) { x[threadIdx.x] += 1.f; }
#include "body.inc"
// __global__ void softmax_warp_forward(float* x) {}   <- a comment: no such kernel exists
/* __global__ void at_native_decoy(float*); */
namespace at { namespace native { __global__ void vectorized_elementwise_kernel(float* x) { x[0] = 0; } } }
extern "C" void launch_all(float* x, cudaStream_t s) {
    scale_kernel<<<1, 32, 0, s>>>(x, 32);
    bounds_first<<<1, 32, 0, s>>>(x);
    from_inc<4><<<1, 32, 0, s>>>(x);
    at::native::vectorized_elementwise_kernel<<<1, 1, 0, s>>>(x);
}
"""
INC = "template <int K> __global__ void from_inc(float* x) { x[threadIdx.x] *= K; }\n"

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("devcode")
    (folder / "k.cu").write_text(SOURCE)
    (folder / "body.inc").write_text(INC)
    obj, lib = folder / "k.o", folder / "k.so"
    subprocess.run(["nvcc", "-c", str(folder / "k.cu"), "-o", str(obj), "-gencode", "arch=compute_90a,code=sm_90a",
                    "--no-compress", "-Xcompiler", "-fPIC"], check=True, capture_output=True, timeout=300)  # fmt: skip
    subprocess.run(["g++", "-shared", "-o", str(lib), str(obj)], check=True, capture_output=True, timeout=120)
    return lib


@needs_nvcc
def test_every_kernel_is_found_in_the_binary_and_nothing_else(library: Path) -> None:
    found = {k.demangled for k in kernels(library)}
    assert found == {
        "scale_kernel(float*, int)",
        "bounds_first(float*)",
        "void from_inc<4>(float*)",
        "at::native::vectorized_elementwise_kernel(float*)",
    }, found
    assert reserved_kernels(kernels(library)) == ["at::native::vectorized_elementwise_kernel(float*)"]
    names, reserved = binary_attribution(library)
    assert reserved and "softmax_warp_forward" not in " ".join(names)
    # The profiler's names for these kernels are submitted; PyTorch's softmax is foreign even though a
    # comment in the source declares a kernel of that name.
    ran = {"void from_inc<4>(float*)": 10.0, "bounds_first(float*)": 5.0,
           "void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10>(float*)": 15.0}  # fmt: skip
    softmax = normalise("void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10>(float*)")
    report = coverage_report(ran, names, {"softmax"}, lists=KernelLists(torch=frozenset({softmax})))
    assert report.submitted_us == 15.0 and report.share == pytest.approx(0.5)


@needs_nvcc
def test_imported_symbols_of_a_host_object(library: Path) -> None:
    symbols = imported_symbols(library.with_suffix(".o"))
    assert "__cudaRegisterFatBinary" in symbols and "__cudaLaunchKernel" in symbols
    assert not any(s.startswith("scale_kernel") for s in symbols)  # defined here, not imported


def test_qualified_names() -> None:
    assert qualified_name("void at::native::foo<4, bar<int>>(float*)") == "at::native::foo"
    assert qualified_name("(anonymous namespace)::copy_kernel(float4 const*, float4*, long)") == (
        "(anonymous namespace)::copy_kernel"
    )
    assert qualified_name("sm90_xmma_gemm_f32f32") == "sm90_xmma_gemm_f32f32"


def test_a_file_that_is_not_elf_is_an_error(tmp_path: Path) -> None:
    from cuda_agent.judge.trusted.device_code import DeviceCodeError

    bad = tmp_path / "x.so"
    bad.write_bytes(b"not an elf")
    with pytest.raises(DeviceCodeError):
        kernels(bad)
