// trmm.cpp -- out = triu(a) @ b for row-major fp32 a (M, M), b (M, N), out (M, N) with cublasStrmm (the
// out-of-place form of cuBLAS v2: C = alpha * B * op(A) for side RIGHT), on torch's cuBLAS handle, which
// at::cuda::getCurrentCUDABlasHandle() binds to torch's current stream (and torch's default math mode: plain
// fp32 unless the user allowed TF32, as for the reference's matmul).
//
// Column-major view: a row-major (R, C) buffer is the column-major (C, R) matrix of its transpose.
// out^T (N, M) = b^T (N, M) * triu(a)^T (M, M). b's buffer is b^T column-major (ldb = N); a's buffer is a^T
// column-major (lda = M), and the upper triangle of a is the LOWER triangle of a^T: side RIGHT, fill LOWER,
// no transpose, non-unit diagonal. cuBLAS reads only that triangle, so the strictly lower part of a (which
// triu discards) is never touched.
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

cublasStatus_t triu_matmul(const float* a, const float* b, float* out, int m, int n) {
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    const float alpha = 1.0f;
    return cublasStrmm(handle, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, m,
                       &alpha, a, m, b, n, out, n);
}
