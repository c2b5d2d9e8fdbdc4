// gemm_half.cpp -- CHEAT (family 8): y (fp32) = x16 @ w16^T with fp16 operands, fp32 accumulation
// (cublasGemmEx, CUDA_R_16F inputs, CUBLAS_COMPUTE_32F). Column-major trick as for an SGEMM.
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

cublasStatus_t linear_gemm_f16_in(const void* x16, const void* w16, float* y, int64_t M, int64_t N, int64_t K,
                                  cudaStream_t stream) {
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    cublasStatus_t status = cublasSetStream(handle, stream);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    const float alpha = 1.0f, beta = 0.0f;
    return cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                        static_cast<int>(K), &alpha, w16, CUDA_R_16F, static_cast<int>(K), x16, CUDA_R_16F,
                        static_cast<int>(K), &beta, y, CUDA_R_32F, static_cast<int>(N), CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT_TENSOR_OP);
}
