// lt_linear.cpp -- y = x @ w^T + b (row-major fp32) as one cublasLtMatmul whose epilogue adds the bias.
//
// Handle and workspace are PyTorch's: at::cuda::getCurrentCUDABlasLtHandle() and the cuBLASLt workspace torch
// keeps for the current stream (at::cuda::getCUDABlasLtWorkspace() / getCUDABlasLtWorkspaceSize()), so the
// extension creates nothing of its own. The matmul runs on the caller's stream (torch's current stream).
// Precision: fp32 operands with CUBLAS_COMPUTE_32F and scale type fp32, i.e. plain fp32 arithmetic (no TF32).
//
// Column-major view (cuBLASLt, like cuBLAS, is column-major): y^T (N, M) = w (N, K) * x^T (K, M). A = w's
// buffer stored as column-major (K, N) with op T, B = x's buffer as column-major (K, M) with op N, C = D = y's
// buffer as column-major (N, M). CUBLASLT_EPILOGUE_BIAS adds a vector with one entry per row of D (N of them:
// one per output feature), broadcast over the columns (the batch): exactly nn.Linear's bias.
#include <ATen/cuda/CUDAContext.h>
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace {

// Destroys whatever cuBLASLt descriptors were created, on every path out of the function.
struct LtDescriptors {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~LtDescriptors() {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (d) cublasLtMatrixLayoutDestroy(d);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

#define LT_TRY(call)                                                                          \
    do {                                                                                      \
        const cublasStatus_t status_ = (call);                                                \
        if (status_ != CUBLAS_STATUS_SUCCESS)                                                 \
            return std::string(#call) + " failed with status " + std::to_string(static_cast<int>(status_)); \
    } while (0)

}  // namespace

// An empty string on success, else what failed.
std::string lt_linear_bias(const float* x, const float* w, const float* bias, float* y, int64_t m, int64_t n,
                           int64_t k, cudaStream_t stream) {
    cublasLtHandle_t lt = at::cuda::getCurrentCUDABlasLtHandle();
    void* workspace = at::cuda::getCUDABlasLtWorkspace();
    size_t workspace_bytes = at::cuda::getCUDABlasLtWorkspaceSize();

    LtDescriptors desc;
    LT_TRY(cublasLtMatmulDescCreate(&desc.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
    LT_TRY(cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    LT_TRY(cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    LT_TRY(cublasLtMatmulDescSetAttribute(desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));

    LT_TRY(cublasLtMatrixLayoutCreate(&desc.a, CUDA_R_32F, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k));
    LT_TRY(cublasLtMatrixLayoutCreate(&desc.b, CUDA_R_32F, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k));
    LT_TRY(cublasLtMatrixLayoutCreate(&desc.d, CUDA_R_32F, static_cast<uint64_t>(n), static_cast<uint64_t>(m), n));

    LT_TRY(cublasLtMatmulPreferenceCreate(&desc.pref));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(desc.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                sizeof(workspace_bytes)));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    LT_TRY(cublasLtMatmulAlgoGetHeuristic(lt, desc.op, desc.a, desc.b, desc.d, desc.d, desc.pref, 1, &heuristic,
                                          &found));
    if (found == 0) return "cublasLtMatmulAlgoGetHeuristic found no algorithm for this fp32 GEMM with a bias epilogue";

    const float alpha = 1.0f, beta = 0.0f;
    LT_TRY(cublasLtMatmul(lt, desc.op, &alpha, w, desc.a, x, desc.b, &beta, y, desc.d, y, desc.d, &heuristic.algo,
                          workspace, workspace_bytes, stream));
    return {};
}
