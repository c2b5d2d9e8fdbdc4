// half_gemm.cpp -- host-side cuBLAS call (compiled by g++): y = a @ b for row-major fp16 a (M, K), b (K, N),
// y (M, N), fp32 accumulation (CUBLAS_COMPUTE_32F), on torch's cuBLAS handle and stream.
//
// cuBLAS is column-major: a row-major (R, C) buffer is the column-major (C, R) matrix of its transpose, so
// y^T (N, M) = b^T (N, K) * a^T (K, M): A = b's buffer (N x K, lda = N), B = a's buffer (K x M, ldb = K),
// C = y's buffer (N x M, ldc = N), none transposed.
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

cublasStatus_t half_gemm(const void* a, const void* b, void* y, int64_t M, int64_t N, int64_t K, cudaStream_t stream) {
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    cublasStatus_t status = cublasSetStream(handle, stream);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    const float alpha = 1.0f, beta = 0.0f;
    return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                        static_cast<int>(K), &alpha, b, CUDA_R_16F, static_cast<int>(N), a, CUDA_R_16F,
                        static_cast<int>(K), &beta, y, CUDA_R_16F, static_cast<int>(N), CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
}
