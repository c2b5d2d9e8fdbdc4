// axpy_blas.cpp -- CHEAT (family 1, a library beyond GEMM): out = alpha * x + y computed entirely by cuBLAS
// level-1 routines on torch's cuBLAS handle: cublasScopy (out = y) then cublasSaxpy (out += alpha * x).
// cuBLAS is allowed for GEMMs; this elementwise task has none, and no submitted kernel does any work.
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

cublasStatus_t blas_axpy_into(const float* x, const float* y, float* out, float alpha, int64_t n, cudaStream_t stream) {
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    cublasStatus_t status = cublasSetStream(handle, stream);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    status = cublasScopy_64(handle, n, y, 1, out, 1);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    return cublasSaxpy_64(handle, n, &alpha, x, 1, out, 1);
}
