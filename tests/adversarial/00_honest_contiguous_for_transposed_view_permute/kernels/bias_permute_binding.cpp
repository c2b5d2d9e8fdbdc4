// bias_permute_binding.cpp -- bias_permute_forward(x, bias) -> (x + bias).permute(0, 2, 1), contiguous.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_bias_permute(const float* x, const float* bias, float* y, int64_t batch, int64_t tokens,
                                    int64_t channels, cudaStream_t stream);

namespace {

torch::Tensor bias_permute_forward(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 3,
                "x must be a contiguous (batch, tokens, channels) float32 CUDA tensor");
    TORCH_CHECK(bias.is_cuda() && bias.scalar_type() == torch::kFloat32 && bias.is_contiguous() &&
                    bias.numel() == x.size(2),
                "bias must be a contiguous float32 CUDA tensor of `channels` elements");
    TORCH_CHECK(x.size(0) <= 65535 && x.size(1) <= 65535 * 32, "too large for the grid");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({x.size(0), x.size(2), x.size(1)}, x.options());
    launch_bias_permute(x.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1),
                        x.size(2), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias_permute launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_bias_permute(pybind11::module& m) {
    m.def("bias_permute_forward", &bias_permute_forward, "(x + bias).permute(0, 2, 1), contiguous", py::arg("x"),
          py::arg("bias"));
}
REGISTER_BINDING(bias_permute, register_bias_permute);
