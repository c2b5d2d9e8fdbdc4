// half_chain_binding.cpp -- Python entry point of the fp16 elementwise chain (kernels/half_chain.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_half_chain(const void* x, void* y, int64_t n, float scale, float shift, float lo, float hi,
                                  int sms, cudaStream_t stream);

namespace {

torch::Tensor half_chain_forward(torch::Tensor x, double scale, double shift, double lo, double hi) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kHalf && x.is_contiguous(),
                "x must be a contiguous float16 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    launch_half_chain(x.data_ptr(), y.data_ptr(), x.numel(), static_cast<float>(scale), static_cast<float>(shift),
                      static_cast<float>(lo), static_cast<float>(hi), sms, c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "half chain launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_half_chain(pybind11::module& m) {
    m.def("half_chain_forward", &half_chain_forward, "clamp(gelu(x * scale + shift), lo, hi) for fp16 x",
          py::arg("x"), py::arg("scale"), py::arg("shift"), py::arg("lo"), py::arg("hi"));
}
REGISTER_BINDING(half_chain, register_half_chain);
