// layernorm_binding.cpp -- Python entry point for the LayerNorm kernel (normalises over the last dim).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

extern "C" void launch_layernorm(const float* x, const float* weight, const float* bias, float* y, int64_t rows,
                                 int64_t cols, float eps, cudaStream_t stream);

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda(), "all inputs must be CUDA tensors");
        TORCH_CHECK(t->scalar_type() == torch::kFloat32, "all inputs must be float32");
        TORCH_CHECK(t->is_contiguous(), "all inputs must be contiguous");
    }
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    const int64_t cols = x.size(-1);
    TORCH_CHECK(weight.dim() == 1 && weight.size(0) == cols && bias.dim() == 1 && bias.size(0) == cols,
                "weight and bias must have shape (x.size(-1),)");
    const int64_t rows = cols > 0 ? x.numel() / cols : 0;
    TORCH_CHECK(rows <= std::numeric_limits<int32_t>::max() && cols <= std::numeric_limits<int32_t>::max(),
                "x is too large");
    const c10::cuda::CUDAGuard guard(x.device());

    torch::Tensor y = torch::empty_like(x);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    launch_layernorm(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                     rows, cols, static_cast<float>(eps), stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "layernorm kernel launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_layernorm(pybind11::module& m) {
    m.def("layernorm_forward", &layernorm_forward, "LayerNorm over the last dim with weight and bias",
          py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("eps"));
}
REGISTER_BINDING(layernorm, register_layernorm);
