// gelu_binding.cpp -- the forward function is declared first, registered, and defined at the end of the
// file: a declaration, not a tensor kept between calls.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void gelu_launcher(const float* x, float* y, int64_t n, cudaStream_t stream);

static torch::Tensor gelu_forward(torch::Tensor x);

static void register_gelu(pybind11::module& m) {
    m.def("gelu_forward", &gelu_forward, "exact GELU of a float32 tensor", py::arg("x"));
}
REGISTER_BINDING(gelu, register_gelu);

static torch::Tensor gelu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    gelu_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gelu launch failed: ", cudaGetErrorString(err));
    return y;
}
