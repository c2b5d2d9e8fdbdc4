// linear_silu_binding.cpp -- Python entry point: silu(x @ w^T + b) for fp32 x (M, K), w (N, K), b (N):
// the GEMM on the extension's private cuBLAS handle (kernels/private_gemm.cpp), bias + SiLU fused in one
// epilogue kernel (kernels/bias_silu.cu), both on torch's current stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

cublasStatus_t private_sgemm_xwt(const float* x, const float* w, float* y, int m, int n, int k, cudaStream_t stream);
extern "C" void launch_bias_silu(float* y, const float* bias, int64_t m, int64_t n, cudaStream_t stream);

namespace {

torch::Tensor linear_silu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "x, weight and bias must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1, "expected x (M, K), weight (N, K), bias (N)");
    const int64_t m = x.size(0), k = x.size(1), n = weight.size(0);
    TORCH_CHECK(weight.size(1) == k && bias.size(0) == n, "shape mismatch between x, weight and bias");
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    TORCH_CHECK(m <= kIntMax && n <= kIntMax && k <= kIntMax && k > 0, "GEMM dimensions must fit in int");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({m, n}, x.options());
    if (m == 0 || n == 0) return y;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    const cublasStatus_t status = private_sgemm_xwt(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(),
                                                    static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSgemm failed with status ", static_cast<int>(status));
    launch_bias_silu(y.data_ptr<float>(), bias.data_ptr<float>(), m, n, stream);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias_silu launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_linear_silu(pybind11::module& m) {
    m.def("linear_silu_forward", &linear_silu_forward, "silu(x @ weight^T + bias), private cuBLAS handle",
          py::arg("x"), py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(linear_silu, register_linear_silu);
