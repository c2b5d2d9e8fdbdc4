"""Which routines of the allowed libraries a submission may call, by what the task has: rule tables as data.

Rule (stated in SKILL.md, "Libraries and build"): library work counts as the submission's own only in the
kind of op the library is allowed for: cuBLAS and cuBLASLt in the task's matrix products (`GEMM_OPS`),
cuDNN in its convolutions (`CONV_OPS`). Matrix products are BLAS-2 and BLAS-3: gemv/ger, gemm in every
form (Ex, batched, strided-batched, cuBLASLt with its epilogues), symm/hemm, syrk/herk/syr2k, trmm and
trsm; a convolution is cuDNN's convolution family (with its fused bias and activation), or a cuDNN graph.
A submission that is only a library call, where the task is only a matrix product or a convolution, is
allowed: it competes on the configuration it picks, and the bar (faster than torch.compile, which calls the
same libraries) is what makes it worth a reward. The precision is the task's: the precision audit measures
every output against a float64 evaluation (TF32, fp16 or bf16 math inside an fp32 task is refused there,
whatever enum value selected it).

What is refused here, and why nothing dynamic sees it: the routines below do elementwise work, reductions or
factorisations, the work the submission's own kernels are for. Their kernels run inside cuBLAS/cuDNN
under names (`axpy_kernel_val<...>(cublasAxpyParamsVal...)`, `cudnn::...`) that the coverage gate cannot
tell from the library's GEMM or convolution kernels, so the symbol the built object imports is the
evidence (whatever the source spelled), and the source text gives the line.

Trust boundary: parent, on source text and on the symbols of objects the judge built.
"""

from __future__ import annotations

import re

# ATen op names as the task probe records them (composites decompose: torch.inner, chain_matmul, multi_dot,
# matrix_power, einsum and linear on 3-D inputs reach mm/bmm; torch.outer and kron reach mul, not a product).
GEMM_OPS = frozenset(
    {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addmv", "mv", "_scaled_mm", "addbmm", "einsum",
     "tensordot", "dot", "vdot", "_addmm_activation", "_int_mm",
     "addmm_", "baddbmm_", "addbmm_", "addmv_", "addr_",
     # a triangular solve is BLAS-3 (cuBLAS's trsm): 00_honest_cublas_trsm_solve_triangular was refused
     "linalg_solve_triangular", "triangular_solve",
     # not decomposed by the probe, each a matrix product: nn.Bilinear's x1 A x2, torch.addr's rank-1 update
     # A + x y^T (BLAS-2 ger), cdist's p=2 distances through x y^T (00_honest_{bilinear,addr,cdist}_cublas*)
     "_trilinear", "bilinear", "addr", "_euclidean_dist",
     # attention is two batched products around a softmax: cuBLAS for Q K^T and P V, the softmax in the
     # submission's own kernel (00_honest_sdpa_cublas_batched, refused on the H200 where the reference ran
     # the efficient-attention op)
     "scaled_dot_product_attention", "_scaled_dot_product_efficient_attention",
     "_scaled_dot_product_flash_attention", "_scaled_dot_product_cudnn_attention",
     "_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention_for_cpu"}
)  # fmt: skip
CONV_OPS = frozenset(
    {"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
     "conv_transpose3d", "cudnn_convolution", "cudnn_convolution_transpose"}
)  # fmt: skip

# cuBLAS routines that are not matrix products: (routine name pattern, what it is). Names are matched with
# the type letter (S, D, C, Z, H; I for the index routines) and the _v2/_64 suffixes around them.
CUBLAS_REFUSED: list[tuple[str, str]] = [
    (r"(axpy|scal|copy|swap)", "BLAS-1 vector update (elementwise work)"),
    (r"(dot[uc]?|nrm2|asum)", "BLAS-1 reduction"),
    (r"(am(?:ax|in))", "BLAS-1 index reduction (cublasIsamax)"),
    (r"(rot[gm]{0,2})", "BLAS-1 plane rotation (elementwise work)"),
    (r"(geam)", "matrix addition/transposition (elementwise work)"),
    (r"(dgmm)", "diagonal scaling (elementwise work)"),
    (r"(getr[fis]|geqrf|gels|matinv|tpttr|trttp)\w*", "factorisation, inversion or format conversion"),
]
# The *Ex forms of BLAS-1 (cublasAxpyEx, cublasDotcEx, cublasNrm2Ex, cublasIamaxEx...).
_CUBLAS_EX_REFUSED = r"(Axpy|Scal|Copy|Swap|Dot[uc]?|Nrm2|Asum|Iamax|Iamin|Rot[gm]{0,2})Ex"

# cuDNN routines outside the convolution family: (pattern, what it is). Allowed besides the convolution
# routines: handles, descriptors, workspace queries, cudnnAddTensor (a convolution's bias), layout
# transforms and fills (data movement), and the graph (backend) API.
CUDNN_REFUSED: list[tuple[str, str]] = [
    (r"cudnnSoftmax\w*", "softmax"),
    (r"cudnnPooling\w*", "pooling"),
    (r"cudnn(BatchNormalization|Normalization|LRN|DivisiveNormalization)\w*", "normalisation"),
    (r"cudnnActivation(Forward|Backward)\w*", "a standalone activation (elementwise work)"),
    (r"cudnn(OpTensor|ReduceTensor|ScaleTensor)\w*", "elementwise arithmetic or a reduction"),
    (r"cudnn(RNN|MultiHeadAttn|CTCLoss|Dropout|SpatialTf)\w*", "a layer that is not a convolution"),
]


def _cublas_symbol(routine: str) -> str:
    return rf"cublas(?:[SDCZH]|I[sdcz]){routine}(?:_v2)?(?:_64)?"


def cublas_refusals() -> list[tuple[re.Pattern[str], str]]:
    """(exact-symbol pattern, reason) for every refused cuBLAS routine."""
    rules = [(re.compile(rf"^{_cublas_symbol(r)}$"), what) for r, what in CUBLAS_REFUSED]
    rules.append((re.compile(rf"^cublas{_CUBLAS_EX_REFUSED}(?:_64)?$"), "BLAS-1 routine (elementwise work or a reduction)"))
    return rules


def cudnn_refusals() -> list[tuple[re.Pattern[str], str]]:
    """(exact-symbol pattern, reason) for every refused cuDNN routine."""
    return [(re.compile(rf"^{p}$"), what) for p, what in CUDNN_REFUSED]


def refused_routine(symbol: str) -> str | None:
    """What a refused library routine is (for the reason), or None for an allowed one or another symbol."""
    for pattern, what in (*cublas_refusals(), *cudnn_refusals()):
        if pattern.match(symbol):
            return what
    return None


# The same routines as calls in source text (a line number for the reason; the symbols are the evidence).
SOURCE_CALL = re.compile(
    r"\b(?:" + "|".join([*(_cublas_symbol(r) for r, _ in CUBLAS_REFUSED), rf"cublas{_CUBLAS_EX_REFUSED}",
                         *(p for p, _ in CUDNN_REFUSED)]) + r")\s*\("
)  # fmt: skip

# Routine names that, spelled in source, select reduced-precision math for fp32 operands. Kept as a fast,
# readable reason; the line is the precision audit (a compute type given by number is caught there).
REDUCED_PRECISION_MODES = re.compile(r"\bCUBLAS_COMPUTE_32F_FAST_\w+|\bCUBLAS_TF32_TENSOR_OP_MATH\b")


def no_library_reason(library: str, reference_ops: set[str]) -> str:
    """Why `library` is refused for a task with no op it is allowed for, naming what the task ran."""
    allowed = GEMM_OPS if library == "cuBLAS" else CONV_OPS
    kind = "matrix product" if library == "cuBLAS" else "convolution"
    ran = ", ".join(sorted(reference_ops)[:12]) or "no ATen op"
    return (f"uses {library} but the task has no {kind} (the reference ran: {ran}; {library} is allowed where it "
            f"runs one of: {', '.join(sorted(allowed))})")
