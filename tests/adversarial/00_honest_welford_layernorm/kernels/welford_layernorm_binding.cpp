// welford_layernorm_binding.cpp -- welford_layernorm(x, weight, bias, eps): LayerNorm over the last dim of
// 8192 columns with Welford statistics (kernels/welford_layernorm.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

extern "C" void launch_welford_layernorm(const float* x, const float* weight, const float* bias, float* y, int rows,
                                         int cols, float eps, cudaStream_t stream);

torch::Tensor welford_layernorm(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    const int64_t cols = x.size(-1);
    TORCH_CHECK(cols == 8192, "this kernel keeps 8192 columns per row in registers");
    TORCH_CHECK(weight.numel() == cols && bias.numel() == cols, "weight and bias must have x.size(-1) elements");
    const int64_t rows = x.numel() / cols;
    TORCH_CHECK(rows <= std::numeric_limits<int32_t>::max(), "x is too large");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    launch_welford_layernorm(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                             static_cast<int>(rows), static_cast<int>(cols), static_cast<float>(eps),
                             c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "welford_layernorm launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_welford_layernorm(pybind11::module& m) {
    m.def("welford_layernorm", &welford_layernorm, "LayerNorm over 8192 columns, Welford statistics", py::arg("x"),
          py::arg("weight"), py::arg("bias"), py::arg("eps"));
}
REGISTER_BINDING(welford_layernorm, register_welford_layernorm);
