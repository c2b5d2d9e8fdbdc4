"""Attribution by binary (issue 33, classes 1 and 2): every traced kernel is looked up in the exact kernel
lists of the binaries that can hold it -- the submission's extension, PyTorch's own CUDA libraries, and
cuBLAS/cuBLASLt as torch's wheel ships them -- never matched by name pattern.

The names here are read out of the installed torch wheel's libtorch_cuda.so and libcublas/libcublasLt with
the judge's own listing code (trusted/fatbin.py, library_kernels.py), so the tests fail if a list misses
what it must hold, and they show what the old name patterns got wrong: PyTorch's flash-attention and
memory-efficient attention kernels matched the cuBLAS pattern (`cutlass` in their template arguments) and
were credited as library time to any GEMM task whose submission linked cuBLAS."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from cuda_agent.judge.decide.coverage import CUBLAS_KERNEL, JUDGE_KERNELS, coverage_report
from cuda_agent.judge.trusted import library_kernels
from cuda_agent.judge.trusted.device_code import Kernel, demangle, normalise, reserved_kernels
from cuda_agent.judge.trusted.fatbin import library_entries
from cuda_agent.judge.trusted.library_kernels import (
    KernelLists,
    ListCache,
    kernel_lists,
    library_binaries,
    torch_binaries,
)
from cuda_agent.judge.trusted.name_templates import NameTemplate

SECRET = b"judge-test-secret-0123456789abcdef"
TORCH_CUDA = next((p for p in torch_binaries() if p.name == "libtorch_cuda.so"), None)
needs_wheel = pytest.mark.skipif(TORCH_CUDA is None or not library_binaries("cublas"),
                                 reason="needs torch's CUDA wheel (libtorch_cuda.so, cuBLAS)")  # fmt: skip
OURS = "void attention_kernel<64>(__half const*, __half const*, __half const*, __half*, int)"


@pytest.fixture(scope="module")
def lists(tmp_path_factory: pytest.TempPathFactory) -> KernelLists:
    """PyTorch's and cuBLAS's lists, read from the wheel (about 8 s on two cores, once for this module)."""
    cache = ListCache(SECRET, tmp_path_factory.mktemp("kernel-lists"))
    return kernel_lists({"cublas"}, cache)


def torch_kernel(lists: KernelLists, *needles: str) -> str:
    """The demangled name (as the profiler reports it) of a real PyTorch kernel containing every needle."""
    for name in sorted(n for n in lists.torch if n.startswith("_Z")):
        shown = demangle(name)
        if all(n in shown for n in needles):
            return shown
    raise AssertionError(f"no PyTorch kernel with {needles}")


def cublas_kernel(lists: KernelLists, pattern: str) -> str:
    found = sorted(n for n in lists.libraries["cublas"] if re.search(pattern, n) and not n.startswith("_Z"))
    assert found, pattern
    return found[0]


def attention(ran: dict[str, float], lists: KernelLists, linked: set[str] | None = None) -> object:
    """A task with matrix products (attention written as matmul + softmax + matmul) whose submission calls
    cuBLAS: the setting in which the old patterns credited PyTorch's attention kernels as cuBLAS's."""
    return coverage_report(ran, {normalise(OURS)}, {"matmul", "bmm", "_softmax"}, lists=lists,
                           libraries={"cublas"} if linked is None else linked)  # fmt: skip


@needs_wheel
def test_pytorchs_attention_kernels_are_foreign_wherever_they_run(lists: KernelLists) -> None:
    flash = torch_kernel(lists, "pytorch_flash", "flash_fwd_kernel")
    mem_efficient = torch_kernel(lists, "fmha_cutlassF")
    for name in (flash, mem_efficient):
        assert CUBLAS_KERNEL.search(name), name  # what the old rule credited as cuBLAS
        assert lists.in_torch(name) and lists.library_of(name) is None
    # The same names whether ATen launched them in forward, a symbol lookup called them, or a CUDA graph
    # captured at load replays them: CUPTI reports a replayed kernel node under its function's name.
    report = attention({flash: 900.0, mem_efficient: 100.0, OURS: 10.0}, lists)
    assert report.library_us == 0.0 and report.submitted_us == 10.0
    assert report.share == pytest.approx(10 / 1010)
    assert set(report.origins.values()) == {"pytorch"}
    assert "PyTorch's own kernel" in report.describe_foreign()


@needs_wheel
def test_a_graph_of_linear_gelu_layernorm_replayed_in_forward(lists: KernelLists) -> None:
    """The kernels a replay of a graph captured from `F.layer_norm(F.gelu(F.linear(x, w, b)))` reports:
    cuBLAS's GEMM (cuBLAS's own list: library where the submission links cuBLAS -- which is why the op
    gate refuses the capture itself at load, candidate/opgate.py) and PyTorch's GELU and LayerNorm
    kernels, foreign."""
    gemm = cublas_kernel(lists, r"^sm80_xmma_gemm_f32f32_f32f32_f32_")
    gelu = torch_kernel(lists, "vectorized_elementwise_kernel", "GeluCUDAKernelImpl", "(float)")
    layer_norm = torch_kernel(lists, "vectorized_layer_norm_kernel<float, float")
    report = coverage_report({gemm: 300.0, gelu: 40.0, layer_norm: 60.0}, set(), {"linear", "gelu", "layer_norm"},
                             lists=lists, libraries={"cublas"})  # fmt: skip
    assert report.library_us == 300.0
    assert set(report.foreign) == {gelu, layer_norm} and set(report.origins.values()) == {"pytorch"}


@needs_wheel
def test_a_cublas_gemm_counts_as_library_only_where_allowed(lists: KernelLists) -> None:
    gemm = cublas_kernel(lists, r"^sm90_xmma_gemm_.*_cublas$")
    assert lists.library_of(gemm) == "cublas" and not lists.in_torch(gemm)
    gemm_task = {"addmm"}
    assert coverage_report({gemm: 100.0}, set(), gemm_task, lists=lists, libraries={"cublas"}).share == 1.0
    not_linked = coverage_report({gemm: 100.0}, set(), gemm_task, lists=lists, libraries=set())
    assert not_linked.share == 0.0 and not_linked.origins[gemm] == "library"  # ATen's torch.mm
    no_gemm = coverage_report({gemm: 100.0}, set(), {"relu"}, lists=lists, libraries={"cublas"})
    assert no_gemm.share == 0.0
    # cuBLAS's own routines that are not GEMMs stay foreign on a GEMM task (its scal kernel)
    scal = demangle(next(n for n in sorted(lists.libraries["cublas"]) if n.startswith("_Z11scal_kernel")))
    assert coverage_report({scal: 5.0}, set(), gemm_task, lists=lists, libraries={"cublas"}).share == 0.0


@needs_wheel
@pytest.mark.parametrize(
    "name",
    [
        "my_gemm_xmma",  # matched the old cuBLAS pattern; in no list
        "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma",  # made up
        "void my_cudnn_implicit_conv<4>(float*)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",  # wrong signature
        "my_fill_kernel",  # a fill by name only
        "Memcpy",  # an extern "C" kernel named like a copy activity
        "Memset_kernel",
    ],
)
def test_names_in_no_binary_are_foreign(lists: KernelLists, name: str) -> None:
    """Code loaded at run time (cuModuleLoadData, cudaLibraryLoadData, NVRTC) is in no on-disk binary: a
    name that merely looks like a library's, a fill's or a copy's gains nothing."""
    report = attention({name: 50.0, OURS: 50.0}, lists, linked={"cublas", "cudnn"})
    assert report.share == 0.5 and report.origins == {name: "unlisted"}, report.summary()


@needs_wheel
def test_fills_sleep_copies_and_the_judges_pad_are_neutral(lists: KernelLists) -> None:
    fill = torch_kernel(lists, "vectorized_elementwise_kernel<4, at::native::FillFunctor<float>")
    spin = torch_kernel(lists, "spin_kernel")
    ran = {fill: 5.0, spin: 50.0, next(iter(JUDGE_KERNELS)): 400.0, "Memcpy DtoD (Device -> Device)": 7.0,
           "Memset (Device)": 1.0, OURS: 20.0}  # fmt: skip
    report = attention(ran, lists)
    assert report.share == 1.0 and report.neutral_us == 455.0 and report.copies_us == 8.0
    # PyTorch's compute named with "zero_" or "fill" in a longer word is no fill
    not_fills = [torch_kernel(lists, "ctc_loss_zero_padded_gradients"), torch_kernel(lists, "index_fill_kernel")]
    report = attention({name: 10.0 for name in not_fills} | {OURS: 20.0}, lists)
    assert report.neutral_us == 0.0 and set(report.foreign) == set(not_fills)


@needs_wheel
def test_an_extension_kernel_named_like_pytorchs_is_reserved(lists: KernelLists) -> None:
    """Outside every reserved namespace (flash attention's `pytorch_flash::`, MAGMA's plain names) a kernel
    of the submission's with the exact name of one of PyTorch's would be credited for PyTorch's launches."""
    flash = next(n for n in sorted(lists.torch) if n.startswith("_Z") and "pytorch_flash" in n)
    taken = [Kernel(flash, demangle(flash)), Kernel("_Z12sswap_kerneliPfiS_i", "sswap_kernel(int, float*, int, float*, int)")]
    own = Kernel("_Z13my_own_kernelPf", "my_own_kernel(float*)")
    assert reserved_kernels([*taken, own], lists.torch) == [k.demangled for k in taken]
    assert reserved_kernels([*taken, own]) == []  # by namespace alone: not reserved


@needs_wheel
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_built_kernel_named_like_magmas_is_reserved(lists: KernelLists, tmp_path: Path) -> None:
    from cuda_agent.judge.decide.coverage import binary_attribution

    (tmp_path / "k.cu").write_text("__global__ void sswap_kernel(int n, float* x, int incx, float* y, int incy) "
                                   "{ if (threadIdx.x < n) { float t = x[threadIdx.x * incx]; x[threadIdx.x * incx] = "
                                   "y[threadIdx.x * incy]; y[threadIdx.x * incy] = t; } }\n")  # fmt: skip
    obj, lib = tmp_path / "k.o", tmp_path / "k.so"
    subprocess.run(["nvcc", "-c", str(tmp_path / "k.cu"), "-o", str(obj), "-gencode", "arch=compute_90a,code=sm_90a",
                    "--no-compress", "-Xcompiler", "-fPIC"], check=True, capture_output=True, timeout=300)  # fmt: skip
    subprocess.run(["g++", "-shared", "-o", str(lib), str(obj)], check=True, capture_output=True, timeout=120)
    _, reserved = binary_attribution(lib, lists.torch)
    assert reserved == ["sswap_kernel(int, float*, int, float*, int)"]


@needs_wheel
def test_the_reader_decompresses_the_wheels_fat_binaries() -> None:
    """libcublas's entries are zstd frames (CUDA 13): listed without cuobjdump, with cuBLAS's own names."""
    cublas = next(p for p in library_binaries("cublas") if p.name.startswith("libcublas.so"))
    names = library_entries(cublas)
    assert len(names) > 1000 and any(n.startswith("_Z20gemv2N_kernel") for n in names)


def test_the_cache_is_authenticated_and_keyed_by_the_files_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record is believed only under the judge's key and for the same file (size, mtime, inode); a
    forged one (PyTorch's flash kernel listed as cuBLAS's) is listed again from the binary."""
    binary = tmp_path / "libcublas.so.13"
    binary.write_bytes(b"stand-in")
    read: list[Path] = []

    def listing(path: Path) -> set[str]:
        read.append(path)
        return {"_Z10gemm_innerPf"}

    monkeypatch.setattr(library_kernels, "library_entries", listing)
    monkeypatch.setattr(library_kernels, "_memory", {})
    cache = ListCache(SECRET, tmp_path / "cache")
    assert library_kernels.file_kernels(binary, cache)[1] == 1 and len(read) == 1
    library_kernels._memory.clear()
    assert library_kernels.file_kernels(binary, cache)[1] == 1 and len(read) == 1  # from the record
    # a forged record: same identity, another name, a MAC under another key
    identity = library_kernels._identity(binary)
    ListCache(b"x" * 32, tmp_path / "cache").put(identity, ["_Z15flash_fwd_kernelv"])
    library_kernels._memory.clear()
    names = library_kernels.file_kernels(binary, cache)[0]
    assert "flash_fwd_kernel()" not in names and len(read) == 2 and cache.rejected == 1
    # the file changed: its old record does not apply
    time.sleep(0.01)
    binary.write_bytes(b"another stand-in")
    library_kernels._memory.clear()
    library_kernels.file_kernels(binary, cache)
    assert len(read) == 3
    # memory only (candidates run as the judge's user): nothing read from or written to disk
    library_kernels._memory.clear()
    volatile = ListCache(SECRET, tmp_path / "volatile", persistent=False)
    library_kernels.file_kernels(binary, volatile)
    assert len(read) == 4 and not (tmp_path / "volatile").exists()


NVJET = "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"  # what the H200 ran for an honest fp16 cublasGemmEx


def test_run_time_named_kernels_match_only_the_templates_the_library_holds(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """cuBLASLt assembles its nvjet GEMMs at run time: no fat binary holds their names, only printf templates
    in the library's read-only data. A name the templates can make is cuBLAS's; a near miss stays foreign."""
    binary = tmp_path / "libcublasLt.so.13"
    binary.write_bytes(b"\x7fELF junk\0nvjet_sm%d_%s%s%s_%dx%d_%dx%d_%dx%d_%s_%s_%s\0nvjet_sm90_plain\0"
                       b"nvjet_sm%p_bad\0other_%s\0nvjet_sm%d_tail")  # the last is not NUL-terminated
    assert library_kernels.runtime_templates(binary, "cublas") == ["nvjet_sm%d_%s%s%s_%dx%d_%dx%d_%dx%d_%s_%s_%s"]
    assert library_kernels.runtime_templates(binary, "cudnn") == []  # no run-time names listed for cuDNN
    monkeypatch.setattr(library_kernels, "library_entries", lambda path: {"_Z10gemm_innerPf"})
    monkeypatch.setattr(library_kernels, "_memory", {})
    names, count, templates = library_kernels.file_kernels(binary, ListCache(SECRET, tmp_path / "cache"), "cublas")
    assert count == 1 and templates == ("nvjet_sm%d_%s%s%s_%dx%d_%dx%d_%dx%d_%s_%s_%s",)
    library_kernels._memory.clear()  # the record keeps the templates
    assert library_kernels.file_kernels(binary, ListCache(SECRET, tmp_path / "cache"), "cublas")[2] == templates
    template = NameTemplate.parse(templates[0])
    lists = KernelLists(libraries={"cublas": names}, templates={"cublas": (template,)})
    assert lists.library_of(NVJET) == "cublas"
    for foreign in ("nvjet_smXX_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_hsh_256x128", "my_nvjet_sm90_a_1x2_3x4_5x6_a_b_c",
                    "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT(float*)"):  # fmt: skip
        assert lists.library_of(foreign) is None, foreign

SIMT_SGEMM = "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)"


def test_kernels_loaded_from_embedded_modules_are_the_librarys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cuBLAS loads its SIMT sgemm kernels from modules in its read-only data: the H200 ran one for an honest
    fp32 GEMM (00_honest_bilinear_cublas) and the coverage gate called it "in no binary". Their host names in
    the library's own file list them; a name the file does not hold stays foreign."""
    binary = tmp_path / "libcublasLt.so.13"
    binary.write_bytes(b"\x7fELF junk\0_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE\0"
                       b"_ZN7cutlass7Kernel2I7my_gemmEEvNT_6ParamsE\0")
    monkeypatch.setattr(library_kernels, "library_entries", lambda path: set())
    monkeypatch.setattr(library_kernels, "_memory", {})
    names, count, _ = library_kernels.file_kernels(binary, ListCache(SECRET, tmp_path / "cache"), "cublas")
    assert count == 1
    lists = KernelLists(libraries={"cublas": names})
    assert lists.library_of(SIMT_SGEMM) == "cublas"
    assert lists.library_of(SIMT_SGEMM.replace("256x128", "512x128")) is None
    report = coverage_report({SIMT_SGEMM: 90.0}, set(), {"bilinear"}, lists=lists, libraries={"cublas"})
    assert report.share == 1.0
    assert library_kernels.embedded_names(binary, "cudnn") == []


def test_cublas_ger_counts_on_a_rank_one_update_task() -> None:
    """torch.addr's A + x y^T is BLAS-2's ger (00_honest_addr_cublas_ger: refused on the H200 as a library
    kernel not allowed here); cuBLAS's scal stays foreign."""
    ger = "void ger_kernel<float, float, 256, 5, false>(cublasGerParams<float, float>)"
    scal = "void scal_kernel<float, float, 1, true, 6, 5, 5, 3>(cublasTransposeParams<float>, float const*)"
    lists = KernelLists(libraries={"cublas": frozenset({normalise(ger), normalise(scal)})})
    report = coverage_report({ger: 40.0, scal: 10.0}, set(), {"addr"}, lists=lists, libraries={"cublas"})
    assert report.library_us == 40.0 and set(report.foreign) == {scal}


def test_a_crafted_name_is_refused_in_linear_time() -> None:
    """Names a backtracking regular expression of the real cuBLASLt template took 9-45 s to refuse."""
    real = NameTemplate.parse("nvjet_sm%d_%s_%dx%d_%dx%d_%dx%d%s_%c_%s%s%s%s%s%s%s%s_%c%c%c")
    assert real is not None and real.matches(NVJET)
    started = time.perf_counter()
    for crafted in ("nvjet_sm90_" + "1x1_" * 60 + "!", "nvjet_sm90_" + "1x1_" * 20 + "_" * 150 + "!",
                    "nvjet_sm9_" + "_9x9" * 55 + "!", "nvjet_sm90_" + "a_" * 200):  # fmt: skip
        assert not real.matches(crafted)
    assert time.perf_counter() - started < 0.5
    assert NameTemplate.parse("x_%f") is None and NameTemplate.parse("x_%p") is None
    percent = NameTemplate.parse("x_%d%%")
    assert percent is not None and percent.matches("x_12%") and not percent.matches("x_%")


def test_an_nvjet_kernel_counts_only_where_the_submission_calls_cublas(tmp_path: Path) -> None:
    """The template makes the name cuBLAS's, but cuBLAS's work is the candidate's only on a matrix-product
    task whose own objects call cuBLAS (PyTorch's torch.mm would launch the same kernel)."""
    template = NameTemplate.parse("nvjet_sm%d_%s%s%s_%dx%d_%dx%d_%dx%d_%s_%s_%s")
    lists = KernelLists(libraries={"cublas": frozenset()}, templates={"cublas": (template,)})
    assert CUBLAS_KERNEL.search(NVJET)
    assert coverage_report({NVJET: 100.0}, set(), {"matmul"}, lists=lists, libraries={"cublas"}).share == 1.0
    not_linked = coverage_report({NVJET: 100.0}, set(), {"matmul"}, lists=lists, libraries=set())
    assert not_linked.share == 0.0 and not_linked.origins[NVJET] == "library"
    assert coverage_report({NVJET: 100.0}, set(), {"relu"}, lists=lists, libraries={"cublas"}).share == 0.0


@needs_wheel
def test_the_wheels_cublaslt_templates_print_the_kernel_the_h200_ran(lists: KernelLists) -> None:
    """Read from the installed libcublasLt: the H200's honest fp16 cublasGemmEx kernel is cuBLAS's."""
    assert lists.templates.get("cublas"), "no nvjet template found in the wheel's cuBLASLt"
    assert lists.library_of(NVJET) == "cublas" and not lists.in_torch(NVJET)
    assert lists.library_of("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NN") is None  # one letter short
