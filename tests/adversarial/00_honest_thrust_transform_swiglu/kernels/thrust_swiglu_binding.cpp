// thrust_swiglu_binding.cpp -- Python entry point: silu(gate) * up for two contiguous float32 tensors of one
// shape (kernels/thrust_swiglu.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <string>

#include "../binding_registry.h"

std::string thrust_swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);

namespace {

torch::Tensor swiglu_forward(torch::Tensor gate, torch::Tensor up) {
    for (const torch::Tensor* t : {&gate, &up}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "gate and up must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(gate.sizes() == up.sizes(), "gate and up must have the same shape");
    const c10::cuda::CUDAGuard guard(gate.device());
    torch::Tensor out = torch::empty_like(gate);
    if (out.numel() == 0) return out;
    const std::string error = thrust_swiglu(gate.data_ptr<float>(), up.data_ptr<float>(), out.data_ptr<float>(),
                                            out.numel(), c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(error.empty(), "thrust::transform failed: ", error);
    return out;
}

}  // namespace

static void register_thrust_swiglu(pybind11::module& m) {
    m.def("swiglu_forward", &swiglu_forward, "silu(gate) * up (thrust::transform)", py::arg("gate"), py::arg("up"));
}
REGISTER_BINDING(thrust_swiglu, register_thrust_swiglu);
