// elementwise_chain_binding.cpp -- Python entry point for the fused elementwise chain.
// Checks the input, allocates the output (allocation only) and launches the kernel on torch's stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_elementwise_chain(const float* x, float* y, int64_t n, float scale, float shift,
                                         float lo, float hi, cudaStream_t stream);

torch::Tensor elementwise_chain_forward(torch::Tensor x, double scale, double shift, double clamp_min,
                                        double clamp_max) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    const c10::cuda::CUDAGuard guard(x.device());

    torch::Tensor y = torch::empty_like(x);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    launch_elementwise_chain(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(scale),
                             static_cast<float>(shift), static_cast<float>(clamp_min),
                             static_cast<float>(clamp_max), stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "elementwise_chain kernel launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_elementwise_chain(pybind11::module& m) {
    m.def("elementwise_chain_forward", &elementwise_chain_forward,
          "clamp(gelu(x * scale + shift), clamp_min, clamp_max) in one fused kernel", py::arg("x"),
          py::arg("scale"), py::arg("shift"), py::arg("clamp_min"), py::arg("clamp_max"));
}
REGISTER_BINDING(elementwise_chain, register_elementwise_chain);
