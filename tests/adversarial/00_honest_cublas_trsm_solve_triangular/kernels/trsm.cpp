// trsm.cpp -- x = l^-1 b for row-major fp32 l (N, N) lower triangular and b (N, K), with cublasStrsm on torch's
// cuBLAS handle (at::cuda::getCurrentCUDABlasHandle(): bound to torch's current stream).
//
// trsm solves in place, so b is first copied into x (device to device, on the same stream), then overwritten
// with the solution. Column-major view: a row-major (R, C) buffer is the column-major (C, R) matrix of its
// transpose. l x = b  <=>  x^T l^T = b^T, with x^T (K, N) column-major in x's buffer (ldb = K) and l^T the
// column-major reading of l's buffer (lda = N), whose UPPER triangle is l's lower one: side RIGHT, fill UPPER,
// no transpose, non-unit diagonal. cuBLAS reads only that triangle.
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

// CUBLAS_STATUS_EXECUTION_FAILED if the copy could not be queued.
cublasStatus_t solve_lower(const float* l, const float* b, float* x, int n, int k, cudaStream_t stream) {
    const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(k) * sizeof(float);
    if (cudaMemcpyAsync(x, b, bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    const cublasStatus_t status = cublasSetStream(handle, stream);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    const float alpha = 1.0f;
    return cublasStrsm(handle, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, k, n,
                       &alpha, l, n, x, k);
}
