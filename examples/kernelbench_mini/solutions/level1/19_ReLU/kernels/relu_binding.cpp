// relu_binding.cpp -- Python entry point: checks, allocation, launch on torch's current stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_relu(const float* x, float* y, int64_t n, cudaStream_t stream);

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    launch_relu(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "relu kernel launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_relu(pybind11::module& m) { m.def("relu_forward", &relu_forward, py::arg("x")); }
REGISTER_BINDING(relu, register_relu);
