// private_gemm.cpp -- y = x @ w^T (row-major fp32) with cublasSgemm on the extension's own cuBLAS handle.
//
// The handle is created lazily, once per device, and kept for the life of the process (a cuBLAS handle is
// meant to be reused: creating one costs far more than a GEMM). It holds no data of any call: every call
// binds it to the caller's stream (torch's current stream) with cublasSetStream before the GEMM. Its math
// mode is set once to CUBLAS_DEFAULT_MATH, which for fp32 is plain fp32 FMA arithmetic (no TF32), as the
// task's precision asks.
//
// cuBLAS is column-major; a row-major (R, C) matrix is the column-major (C, R) matrix of its transpose. So
// y^T (N, M) = w (N, K) * x^T (K, M): A = w's buffer as column-major (K, N) transposed (lda = K),
// B = x's buffer as column-major (K, M) (ldb = K), C = y's buffer as column-major (N, M) (ldc = N).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <mutex>

namespace {

constexpr int kMaxDevices = 64;

// The handle of the current device, created on first use; nullptr if cuBLAS could not create one.
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
        *status = cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
        if (*status != CUBLAS_STATUS_SUCCESS) {
            cublasDestroy(handle);
            return nullptr;
        }
        handles[device] = handle;
    }
    *status = CUBLAS_STATUS_SUCCESS;
    return handles[device];
}

}  // namespace

cublasStatus_t private_sgemm_xwt(const float* x, const float* w, float* y, int m, int n, int k, cudaStream_t stream) {
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    cublasHandle_t handle = handle_for_current_device(&status);
    if (handle == nullptr) return status;
    status = cublasSetStream(handle, stream);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    const float alpha = 1.0f, beta = 0.0f;
    return cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w, k, x, k, &beta, y, n);
}
