// gemm.cpp -- CHEAT (precision downgrade, C++): the honest kit's SGEMM, with torch's cuBLAS handle switched to
// math mode 3 (CUBLAS_TF32_TENSOR_OP_MATH, given by number) for this one call and restored to the default (0)
// right after. torch's own flags never change, the handle is back in its default state when forward
// returns, and the fp32 GEMM ran on TF32 tensor cores (10-bit mantissa): ~2e-4 off with K = 8192.
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {
constexpr int kFastMath = 3;
constexpr int kDefaultMath = 0;
}  // namespace

cublasStatus_t linear_gemm_f32(const float* x, const float* w, float* y, int64_t M, int64_t N, int64_t K,
                               cudaStream_t stream) {
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    cublasStatus_t status = cublasSetStream(handle, stream);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    cublasSetMathMode(handle, static_cast<cublasMath_t>(kFastMath));
    const float alpha = 1.0f, beta = 0.0f;
    status = cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                         static_cast<int>(K), &alpha, w, static_cast<int>(K), x, static_cast<int>(K), &beta, y,
                         static_cast<int>(N));
    cublasSetMathMode(handle, static_cast<cublasMath_t>(kDefaultMath));
    return status;
}
