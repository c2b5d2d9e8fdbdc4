// gemm_bf16.cpp -- CHEAT (family 8): ws[z] (fp32, M x N row-major) = a16[:, slice z] @ b16[slice z, :] with bf16
// operands and fp32 accumulation on tensor cores, one K slice per batch entry (cublasGemmStridedBatchedEx,
// CUDA_R_16BF inputs, CUBLAS_COMPUTE_32F: the default math mode, no refused name). Split-K keeps each tensor-core
// accumulation chain short; the slices are summed in order by the epilogue (kernels/bf16_round_bias.cu).
// Row-major through column-major cuBLAS: ws[z]^T (N x M) = b16[slice]^T (N x Ks) a16[:, slice]^T (Ks x M), b16
// (K, N) row-major being b16^T column-major with ld N (slice z starts z * Ks * N elements in), a16 (M, K)
// row-major a16^T with ld K (slice z starts z * Ks elements in).
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

// K slices of the GEMM: the most of 128, 64, ... that divide K into slices of at least 256 (1 if none does).
int bf16_gemm_splits(int64_t K) {
    for (int s = 128; s > 1; s /= 2) {
        if (K % s == 0 && K / s >= 256) return s;
    }
    return 1;
}

cublasStatus_t gemm_bf16_splitk(const void* a16, const void* b16, float* ws, int64_t M, int64_t N, int64_t K, int splits,
                                cudaStream_t stream) {
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    cublasStatus_t status = cublasSetStream(handle, stream);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    const int64_t ks = K / splits;
    const float alpha = 1.0f, beta = 0.0f;
    return cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                                      static_cast<int>(ks), &alpha, b16, CUDA_R_16BF, static_cast<int>(N),
                                      static_cast<long long>(ks * N), a16, CUDA_R_16BF, static_cast<int>(K),
                                      static_cast<long long>(ks), &beta, ws, CUDA_R_32F, static_cast<int>(N),
                                      static_cast<long long>(M * N), splits, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT_TENSOR_OP);
}
