// rotate_binding.cpp -- (re, im, phase) of one shape -> a fresh tensor of that shape plus a last dimension 2.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <vector>

#include "../binding_registry.h"

extern "C" void rotate_launcher(const float* re, const float* im, const float* phase, float* out, int64_t n,
                                cudaStream_t stream);

static torch::Tensor rotate_forward(torch::Tensor re, torch::Tensor im, torch::Tensor phase) {
    for (const torch::Tensor& t : {re, im, phase})
        TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous() && t.sizes() == re.sizes(),
                    "re, im and phase must be contiguous float32 CUDA tensors of one shape");
    const c10::cuda::CUDAGuard guard(re.device());
    std::vector<int64_t> shape(re.sizes().begin(), re.sizes().end());
    shape.push_back(2);
    torch::Tensor out = torch::empty(shape, re.options());  // float2-aligned: fresh allocations are 512-byte aligned
    rotate_launcher(re.data_ptr<float>(), im.data_ptr<float>(), phase.data_ptr<float>(), out.data_ptr<float>(),
                    re.numel(), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "rotate launch failed: ", cudaGetErrorString(err));
    return out;
}

static void register_rotate(pybind11::module& m) {
    m.def("rotate_forward", &rotate_forward, "rotate (re, im) pairs by phase; pairs stacked last", py::arg("re"),
          py::arg("im"), py::arg("phase"));
}
REGISTER_BINDING(rotate, register_rotate);
