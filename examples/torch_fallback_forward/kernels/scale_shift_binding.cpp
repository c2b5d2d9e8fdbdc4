// scale_shift_binding.cpp -- Python entry point for y = x * scale + shift.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_scale_shift(const float* x, float* y, int64_t n, float scale, float shift,
                                   cudaStream_t stream);

torch::Tensor scale_shift_forward(torch::Tensor x, double scale, double shift) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    const c10::cuda::CUDAGuard guard(x.device());

    torch::Tensor y = torch::empty_like(x);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    launch_scale_shift(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(scale),
                       static_cast<float>(shift), stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "scale_shift kernel launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_scale_shift(pybind11::module& m) {
    m.def("scale_shift_forward", &scale_shift_forward, "x * scale + shift", py::arg("x"), py::arg("scale"),
          py::arg("shift"));
}
REGISTER_BINDING(scale_shift, register_scale_shift);
