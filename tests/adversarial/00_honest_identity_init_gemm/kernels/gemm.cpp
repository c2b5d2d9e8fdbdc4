// gemm.cpp -- host-side cuBLAS call (compiled by g++): y = x @ w^T for row-major
// x (M, K), w (N, K), y (M, N), in full fp32 (torch's cuBLAS handle carries torch's math mode, which
// is plain fp32 unless the user allowed TF32, exactly as for the reference's nn.Linear).
//
// cuBLAS is column-major. A row-major (R, C) matrix is the column-major (C, R) matrix of its transpose,
// so we compute y^T (N, M) = w (N, K) * x^T (K, M): A = the buffer of w read as column-major (K, N),
// transposed (CUBLAS_OP_T, lda = K); B = the buffer of x read as column-major (K, M) (CUBLAS_OP_N,
// ldb = K); C = the buffer of y as column-major (N, M) (ldc = N).
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

cublasStatus_t linear_gemm_f32(const float* x, const float* w, float* y, int64_t M, int64_t N, int64_t K,
                               cudaStream_t stream) {
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    cublasStatus_t status = cublasSetStream(handle, stream);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    const float alpha = 1.0f, beta = 0.0f;
    return cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                       static_cast<int>(K), &alpha, w, static_cast<int>(K), x, static_cast<int>(K), &beta, y,
                       static_cast<int>(N));
}
