// global_rms_binding.cpp -- global_rms_norm(x): the binding of kernels/global_rms.cu for a contiguous fp32 CUDA
// tensor whose element count is a multiple of 4.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/cuda/CUDAContext.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_global_rms_norm(const float* x, float* partials, int blocks, float* rms, float* y,
                                       int64_t elements, cudaStream_t stream);

torch::Tensor global_rms_norm(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    TORCH_CHECK(x.numel() > 0 && x.numel() % 4 == 0, "x's element count must be a positive multiple of 4");
    const c10::cuda::CUDAGuard guard(x.device());
    const int blocks = at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 8;
    torch::Tensor partials = torch::empty({blocks}, x.options());
    torch::Tensor rms = torch::empty({1}, x.options());
    torch::Tensor y = torch::empty_like(x);
    launch_global_rms_norm(x.data_ptr<float>(), partials.data_ptr<float>(), blocks, rms.data_ptr<float>(),
                           y.data_ptr<float>(), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "global_rms_norm launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_global_rms_norm(pybind11::module& m) {
    m.def("global_rms_norm", &global_rms_norm, "x / sqrt(mean(x^2)) over the whole tensor", py::arg("x"));
}
REGISTER_BINDING(global_rms_norm, register_global_rms_norm);
