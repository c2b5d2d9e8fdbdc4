// cub_layernorm_binding.cpp -- Python entry point of the templated CUB LayerNorm (kernels/cub_layernorm.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_cub_layernorm(const float* x, const float* w, const float* b, float* y, int64_t rows, int cols,
                                     float eps, cudaStream_t stream);

namespace {

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    const int64_t cols = x.size(-1);
    TORCH_CHECK(cols % 4 == 0 && cols <= 8192 && weight.numel() == cols && bias.numel() == cols,
                "rows of up to 8192 floats, a multiple of 4, with weight and bias of that length");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    launch_cub_layernorm(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                         x.numel() / cols, static_cast<int>(cols), static_cast<float>(eps),
                         c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "layernorm launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_cub_layernorm(pybind11::module& m) {
    m.def("layernorm_forward", &layernorm_forward, "LayerNorm over the last dim with weight and bias", py::arg("x"),
          py::arg("weight"), py::arg("bias"), py::arg("eps"));
}
REGISTER_BINDING(cub_layernorm, register_cub_layernorm);
