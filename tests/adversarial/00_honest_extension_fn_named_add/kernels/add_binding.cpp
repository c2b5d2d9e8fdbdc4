// add_binding.cpp -- registers the extension function `add`.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void add_launcher(const float* a, const float* b, float* c, int64_t n, cudaStream_t stream);

static torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "a and b must be float32 CUDA tensors");
    TORCH_CHECK(a.sizes() == b.sizes() && a.is_contiguous() && b.is_contiguous(),
                "a and b must be contiguous and of the same shape");
    const c10::cuda::CUDAGuard guard(a.device());
    torch::Tensor c = torch::empty_like(a);
    add_launcher(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), a.numel(),
                 c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "add launch failed: ", cudaGetErrorString(err));
    return c;
}

static void register_add(pybind11::module& m) { m.def("add", &add, "a + b of float32 tensors", py::arg("a"), py::arg("b")); }
REGISTER_BINDING(add, register_add);
