#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include "../binding_registry.h"

extern "C" cudaError_t half_clamp_launcher(const float* x, float* y, int64_t n, int device, cudaStream_t stream);

static torch::Tensor half_clamp_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x: contiguous float32 CUDA");
    auto y = torch::empty_like(x);
    const cudaError_t err = half_clamp_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), x.get_device(),
                                                c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "half_clamp failed: ", cudaGetErrorString(err));
    return y;
}

static void register_half_clamp(pybind11::module& m) { m.def("half_clamp_forward", &half_clamp_forward, py::arg("x")); }
REGISTER_BINDING(half_clamp, register_half_clamp);
