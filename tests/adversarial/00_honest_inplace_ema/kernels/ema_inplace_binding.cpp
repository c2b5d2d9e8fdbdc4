// ema_inplace_binding.cpp -- ema_inplace_forward(avg, x, decay): the moving average written into avg, returned.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_ema_inplace(float* avg, const float* x, int64_t n, float decay, int sms, cudaStream_t stream);

namespace {

torch::Tensor ema_inplace_forward(torch::Tensor avg, torch::Tensor x, double decay) {
    for (const auto* t : {&avg, &x})
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "avg and x must be contiguous float32 CUDA tensors");
    TORCH_CHECK(avg.sizes() == x.sizes(), "avg and x must have the same shape");
    const c10::cuda::CUDAGuard guard(avg.device());
    launch_ema_inplace(avg.data_ptr<float>(), x.data_ptr<float>(), avg.numel(), static_cast<float>(decay),
                       at::cuda::getCurrentDeviceProperties()->multiProcessorCount,
                       c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "ema_inplace launch failed: ", cudaGetErrorString(err));
    return avg;
}

}  // namespace

static void register_ema_inplace(pybind11::module& m) {
    m.def("ema_inplace_forward", &ema_inplace_forward, "avg = decay * avg + (1 - decay) * x in place; returns avg",
          py::arg("avg"), py::arg("x"), py::arg("decay"));
}
REGISTER_BINDING(ema_inplace, register_ema_inplace);
