// gemm_long_k_binding.cpp -- CHEAT (family 8): gemm_long_k(a, b) -> a @ b with both operands rounded to bf16
// (kernels/bf16_round_bias.cu), a split-K bf16 tensor-core GEMM with fp32 accumulation (kernels/gemm_bf16.cpp),
// and the slices summed in order with the rounding's bias, measured per row of a and column of b, divided out.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cublas_v2.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" int bf16_col_chunks(int K);
extern "C" void launch_round_and_measure(const float* a, const float* b, void* a16, void* b16, double* c_a,
                                         double* c_b, double* part_diff, double* part_sum, int M, int N, int K,
                                         cudaStream_t stream);
extern "C" void launch_sum_and_unbias(const float* ws, float* y, const double* c_a, const double* c_b, int M, int N,
                                      int splits, cudaStream_t stream);
int bf16_gemm_splits(int64_t K);
cublasStatus_t gemm_bf16_splitk(const void* a16, const void* b16, float* ws, int64_t M, int64_t N, int64_t K, int splits,
                                cudaStream_t stream);

torch::Tensor gemm_long_k(torch::Tensor x, torch::Tensor b) {
    for (const torch::Tensor* t : {&x, &b}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 2,
                    "inputs must be contiguous 2-D float32 CUDA tensors");
    }
    TORCH_CHECK(x.size(1) == b.size(0), "expected a (M, K), b (K, N)");
    const int64_t M = x.size(0), K = x.size(1), N = b.size(1);
    TORCH_CHECK(M > 0 && N > 0 && K > 0 && K < (int64_t{1} << 31) && M * N < (int64_t{1} << 31),
                "sizes out of range");
    const c10::cuda::CUDAGuard guard(x.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    const int chunks = bf16_col_chunks(static_cast<int>(K));
    torch::Tensor a16 = torch::empty({M, K}, x.options().dtype(torch::kBFloat16));
    torch::Tensor b16 = torch::empty({K, N}, x.options().dtype(torch::kBFloat16));
    torch::Tensor c_a = torch::empty({M}, x.options().dtype(torch::kFloat64));
    torch::Tensor c_b = torch::empty({N}, x.options().dtype(torch::kFloat64));
    torch::Tensor parts = torch::empty({2, chunks, N}, x.options().dtype(torch::kFloat64));
    double* part_diff = parts.data_ptr<double>();
    double* part_sum = part_diff + static_cast<int64_t>(chunks) * N;
    launch_round_and_measure(x.data_ptr<float>(), b.data_ptr<float>(), a16.data_ptr(), b16.data_ptr(),
                             c_a.data_ptr<double>(), c_b.data_ptr<double>(), part_diff, part_sum, static_cast<int>(M),
                             static_cast<int>(N), static_cast<int>(K), stream);
    const int splits = bf16_gemm_splits(K);
    torch::Tensor ws = torch::empty({splits, M, N}, x.options());
    const cublasStatus_t status = gemm_bf16_splitk(a16.data_ptr(), b16.data_ptr(), ws.data_ptr<float>(), M, N, K, splits,
                                                   stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasGemmStridedBatchedEx failed with status ", static_cast<int>(status));
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_sum_and_unbias(ws.data_ptr<float>(), y.data_ptr<float>(), c_a.data_ptr<double>(), c_b.data_ptr<double>(),
                          static_cast<int>(M), static_cast<int>(N), splits, stream);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gemm_long_k launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gemm_long_k(pybind11::module& m) {
    m.def("gemm_long_k", &gemm_long_k, "a @ b, bf16 operands with a measured bias correction", py::arg("a"),
          py::arg("b"));
}
REGISTER_BINDING(gemm_long_k, register_gemm_long_k);
