// scaled_sin_binding.cpp -- y = amp * sin(theta) for two float32 tensors of the same shape.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void scaled_sin_launcher(const float* amp, const float* theta, float* y, int64_t n, cudaStream_t stream);

static torch::Tensor scaled_sin_forward(torch::Tensor amp, torch::Tensor theta) {
    TORCH_CHECK(amp.is_cuda() && theta.is_cuda() && amp.scalar_type() == torch::kFloat32 &&
                    theta.scalar_type() == torch::kFloat32,
                "amp and theta must be float32 CUDA tensors");
    TORCH_CHECK(amp.sizes() == theta.sizes() && amp.is_contiguous() && theta.is_contiguous(),
                "amp and theta must be contiguous and of the same shape");
    const c10::cuda::CUDAGuard guard(amp.device());
    torch::Tensor y = torch::empty_like(amp);
    scaled_sin_launcher(amp.data_ptr<float>(), theta.data_ptr<float>(), y.data_ptr<float>(), amp.numel(),
                        c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "scaled_sin launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_scaled_sin(pybind11::module& m) {
    m.def("scaled_sin_forward", &scaled_sin_forward, "amp * sin(theta)", py::arg("amp"), py::arg("theta"));
}
REGISTER_BINDING(scaled_sin, register_scaled_sin);
