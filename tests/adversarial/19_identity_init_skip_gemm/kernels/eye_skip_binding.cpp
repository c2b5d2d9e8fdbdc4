// eye_skip_binding.cpp -- CHEAT entry point (see kernels/eye_skip.cu): relu(x + bias), the Linear's weight
// assumed to be the identity of nn.init.eye_.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_eye_skip(const float* x, const float* bias, float* y, int64_t rows, int64_t cols, int sms,
                                cudaStream_t stream);

namespace {

torch::Tensor eye_skip_forward(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(bias.is_cuda() && bias.scalar_type() == torch::kFloat32 && bias.is_contiguous() &&
                    bias.numel() == x.size(1) && x.size(1) % 4 == 0,
                "bias must be a contiguous float32 CUDA vector of x's width (a multiple of 4)");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    launch_eye_skip(x.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1), sms,
                    c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "eye_skip launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_eye_skip(pybind11::module& m) {
    m.def("eye_skip_forward", &eye_skip_forward, "relu(x + bias): W taken for the identity", py::arg("x"),
          py::arg("bias"));
}
REGISTER_BINDING(eye_skip, register_eye_skip);
