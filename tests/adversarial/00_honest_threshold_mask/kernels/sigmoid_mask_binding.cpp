// sigmoid_mask_binding.cpp -- sigmoid_mask_forward(x) -> the bool mask sigmoid(x) > 0.5.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_sigmoid_mask(const float* x, bool* mask, int64_t n, int sms, cudaStream_t stream);

namespace {

torch::Tensor sigmoid_mask_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor mask = torch::empty(x.sizes(), x.options().dtype(torch::kBool));
    launch_sigmoid_mask(x.data_ptr<float>(), mask.data_ptr<bool>(), x.numel(),
                        at::cuda::getCurrentDeviceProperties()->multiProcessorCount,
                        c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "sigmoid_mask launch failed: ", cudaGetErrorString(err));
    return mask;
}

}  // namespace

static void register_sigmoid_mask(pybind11::module& m) {
    m.def("sigmoid_mask_forward", &sigmoid_mask_forward, "sigmoid(x) > 0.5 as a bool tensor", py::arg("x"));
}
REGISTER_BINDING(sigmoid_mask, register_sigmoid_mask);
