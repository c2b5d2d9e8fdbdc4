// linear_gelu_binding.cpp -- Python entry point: gelu(x @ w^T + b) for fp32 x (M, K), w (N, K), b (N):
// cuBLASLt GEMM with a bias epilogue (kernels/lt_linear.cpp), then the own GELU kernel (kernels/gelu.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <string>

#include "../binding_registry.h"

std::string lt_linear_bias(const float* x, const float* w, const float* bias, float* y, int64_t m, int64_t n,
                           int64_t k, cudaStream_t stream);
extern "C" void launch_gelu_inplace(float* y, int64_t n, cudaStream_t stream);

namespace {

torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "x, weight and bias must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1, "expected x (M, K), weight (N, K), bias (N)");
    const int64_t m = x.size(0), k = x.size(1), n = weight.size(0);
    TORCH_CHECK(weight.size(1) == k && bias.size(0) == n && k > 0, "shape mismatch between x, weight and bias");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({m, n}, x.options());
    if (m == 0 || n == 0) return y;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    const std::string error = lt_linear_bias(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                                             y.data_ptr<float>(), m, n, k, stream);
    TORCH_CHECK(error.empty(), "cuBLASLt: ", error);
    launch_gelu_inplace(y.data_ptr<float>(), y.numel(), stream);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gelu launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_linear_gelu(pybind11::module& m) {
    m.def("linear_gelu_forward", &linear_gelu_forward, "gelu(x @ weight^T + bias) (cuBLASLt bias epilogue)",
          py::arg("x"), py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(linear_gelu, register_linear_gelu);
