// private_bmm.cpp -- s[b] = scale * q[b] @ k[b]^T for row-major fp32 q (B, Lq, D), k (B, Lk, D), s (B, Lq, Lk),
// as one cublasGemmStridedBatchedEx on the extension's own cuBLAS handle.
//
// The handle is created lazily, once per device, and reused (creating one costs far more than a GEMM); it
// keeps no data of any call, and every call binds it to the caller's stream (cublasSetStream). The compute
// type is CUBLAS_COMPUTE_32F with fp32 operands: full fp32 arithmetic, as the task's precision asks (the
// _FAST_TF32 / _FAST_16F compute types would not be).
//
// Column-major view: row-major s[b] (Lq, Lk) is column-major s[b]^T (Lk, Lq) = k[b] q[b]^T. k's buffer read
// column-major is k[b]^T (D, Lk), so A = k with CUBLAS_OP_T (lda = D); q's buffer read column-major is
// q[b]^T (D, Lq), so B = q with CUBLAS_OP_N (ldb = D); C = s (ldc = Lk). Consecutive batches are
// Lk * D, Lq * D and Lq * Lk elements apart.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <mutex>

namespace {

constexpr int kMaxDevices = 64;

cublasHandle_t handle_for_current_device(cublasStatus_t* status) {
    static std::mutex mutex;
    static std::array<cublasHandle_t, kMaxDevices> handles{};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
        *status = CUBLAS_STATUS_INVALID_VALUE;
        return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (handles[device] == nullptr) {
        cublasHandle_t handle = nullptr;
        *status = cublasCreate(&handle);
        if (*status != CUBLAS_STATUS_SUCCESS) return nullptr;
        handles[device] = handle;
    }
    *status = CUBLAS_STATUS_SUCCESS;
    return handles[device];
}

}  // namespace

cublasStatus_t private_scores_bmm(const float* q, const float* k, float* s, int batch, int lq, int lk, int d,
                                  float scale, cudaStream_t stream) {
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    cublasHandle_t handle = handle_for_current_device(&status);
    if (handle == nullptr) return status;
    status = cublasSetStream(handle, stream);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    const float alpha = scale, beta = 0.0f;
    return cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, lk, lq, d, &alpha,
                                      k, CUDA_R_32F, d, static_cast<long long>(lk) * d,
                                      q, CUDA_R_32F, d, static_cast<long long>(lq) * d, &beta,
                                      s, CUDA_R_32F, lk, static_cast<long long>(lq) * lk,
                                      batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
