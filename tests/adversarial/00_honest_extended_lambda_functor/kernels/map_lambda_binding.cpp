#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void leaky_clamp_launcher(const float* x, float* y, int64_t n, float slope, float hi, cudaStream_t stream);

static torch::Tensor leaky_clamp_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x: contiguous float32 CUDA");
    auto y = torch::empty_like(x);
    leaky_clamp_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), 0.01f, 3.0f,
                         c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_leaky_clamp(pybind11::module& m) { m.def("leaky_clamp_forward", &leaky_clamp_forward, py::arg("x")); }
REGISTER_BINDING(leaky_clamp, register_leaky_clamp);
