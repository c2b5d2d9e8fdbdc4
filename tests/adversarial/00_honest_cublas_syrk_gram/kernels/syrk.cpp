// syrk.cpp -- one triangle of c = a @ a^T for row-major fp32 a (N, K), c (N, N), with cublasSsyrk on torch's
// cuBLAS handle (at::cuda::getCurrentCUDABlasHandle(): torch's current stream and default math mode).
//
// Column-major view: a's buffer read column-major is a^T (K, N) (lda = K), so c = (a^T)^T (a^T): op T, with
// n = N and k = K. cuBLAS fills the LOWER triangle of c in its column-major view (ldc = N), which is the UPPER
// triangle (column >= row) of the row-major c; beta = 0, so c's other triangle is neither read nor written.
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

cublasStatus_t gram_upper(const float* a, float* c, int n, int k) {
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    const float alpha = 1.0f, beta = 0.0f;
    return cublasSsyrk(handle, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n, k, &alpha, a, k, &beta, c, n);
}
