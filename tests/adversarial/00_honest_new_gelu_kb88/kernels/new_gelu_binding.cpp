// new_gelu_binding.cpp -- new_gelu_forward(x) -> the tanh approximation of GELU, elementwise.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_new_gelu(const float* x, float* y, int64_t n, int sms, cudaStream_t stream);

namespace {

torch::Tensor new_gelu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    launch_new_gelu(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                    at::cuda::getCurrentDeviceProperties()->multiProcessorCount,
                    c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "new_gelu launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_new_gelu(pybind11::module& m) {
    m.def("new_gelu_forward", &new_gelu_forward, "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))", py::arg("x"));
}
REGISTER_BINDING(new_gelu, register_new_gelu);
