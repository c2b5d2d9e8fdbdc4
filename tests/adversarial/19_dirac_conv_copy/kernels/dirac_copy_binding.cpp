// dirac_copy_binding.cpp -- CHEAT entry point (see kernels/dirac_copy.cu): relu(x + bias[c]), the convolution
// taken for the identity of nn.init.dirac_.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_dirac_copy(const float* x, const float* bias, float* y, int64_t n, int64_t channels,
                                  int64_t plane, int sms, cudaStream_t stream);

namespace {

torch::Tensor dirac_copy_forward(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 4,
                "x must be a contiguous NCHW float32 CUDA tensor");
    const int64_t plane = x.size(2) * x.size(3);
    TORCH_CHECK(plane % 4 == 0, "H * W must be a multiple of 4");
    TORCH_CHECK(bias.is_cuda() && bias.scalar_type() == torch::kFloat32 && bias.is_contiguous() &&
                    bias.numel() == x.size(1),
                "bias must be a contiguous float32 CUDA vector with one entry per channel");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    launch_dirac_copy(x.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), x.numel(), x.size(1), plane,
                      sms, c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "dirac_copy launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_dirac_copy(pybind11::module& m) {
    m.def("dirac_copy_forward", &dirac_copy_forward, "relu(x + bias[c]): the conv taken for the identity",
          py::arg("x"), py::arg("bias"));
}
REGISTER_BINDING(dirac_copy, register_dirac_copy);
