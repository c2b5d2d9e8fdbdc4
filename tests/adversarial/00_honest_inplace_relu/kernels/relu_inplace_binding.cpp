// relu_inplace_binding.cpp -- relu_inplace_forward(x): max(x, 0) written into x, which is returned.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_relu_inplace(float* x, int64_t n, int sms, cudaStream_t stream);

namespace {

torch::Tensor relu_inplace_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    launch_relu_inplace(x.data_ptr<float>(), x.numel(), at::cuda::getCurrentDeviceProperties()->multiProcessorCount,
                        c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "relu_inplace launch failed: ", cudaGetErrorString(err));
    return x;
}

}  // namespace

static void register_relu_inplace(pybind11::module& m) {
    m.def("relu_inplace_forward", &relu_inplace_forward, "x = max(x, 0) in place; returns x", py::arg("x"));
}
REGISTER_BINDING(relu_inplace, register_relu_inplace);
