// gemm_lt.cpp -- CHEAT (issue 12 class 6, C++): the fp32 GEMM of an fp32 task as a bf16 cublasLt matmul.
//
// Operands converted to bf16 (8-bit mantissa) by kernels/to_bf16.cu, multiplied on bf16 tensor cores with
// fp32 accumulation and fp32 output, on torch's own cublasLt handle (no private handle for a static rule),
// with the compute type spelled CUBLAS_COMPUTE_32F (no FAST_* name): what lowers the precision is the
// operands' data type, CUDA_R_16BF, which no rule about compute types or math modes looks at. On this task
// (K = 8192, |x| ~ 1, |w| < 0.011) the result is ~2e-3 off the fp32 reference, inside atol = rtol = 1e-2,
// and several times faster than the fp32 SGEMM. Row-major y = x w^T is column-major y^T = w x^T:
// A = w (K x N col-major, transposed), B = x (K x M col-major), D = y^T (N x M col-major).
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>

#include <cstdint>

cublasStatus_t linear_gemm_bf16_lt(const void* x16, const void* w16, float* y, int64_t M, int64_t N, int64_t K,
                                   void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    cublasLtHandle_t lt = at::cuda::getCurrentCUDABlasLtHandle();
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    cublasStatus_t status = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa));
    if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb));
    if (status == CUBLAS_STATUS_SUCCESS) status = cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, K, N, K);
    if (status == CUBLAS_STATUS_SUCCESS) status = cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, K, M, K);
    if (status == CUBLAS_STATUS_SUCCESS) status = cublasLtMatrixLayoutCreate(&d, CUDA_R_32F, N, M, N);
    if (status == CUBLAS_STATUS_SUCCESS) status = cublasLtMatmulPreferenceCreate(&pref);
    if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                      sizeof(workspace_bytes));
    cublasLtMatmulHeuristicResult_t heuristic = {};
    int found = 0;
    if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, d, d, pref, 1, &heuristic, &found);
    if (status == CUBLAS_STATUS_SUCCESS && found == 0) status = CUBLAS_STATUS_NOT_SUPPORTED;
    const float alpha = 1.0f, beta = 0.0f;
    if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasLtMatmul(lt, op, &alpha, w16, a, x16, b, &beta, y, d, y, d, &heuristic.algo, workspace,
                                workspace_bytes, stream);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
    return status;
}
