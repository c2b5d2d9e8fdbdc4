#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" cudaError_t channel_scale_launcher(const float* x, const float* scale, float* y, int n, int channels,
                                              int64_t plane, float shift, cudaStream_t stream);

static torch::Tensor channel_scale_forward(torch::Tensor x, torch::Tensor scale, double shift) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.dim() == 4 && x.scalar_type() == torch::kFloat32, "x: NCHW float32");
    TORCH_CHECK(scale.is_contiguous() && scale.numel() == x.size(1) && scale.scalar_type() == torch::kFloat32, "scale: (C,)");
    auto y = torch::empty_like(x);
    const cudaError_t err = channel_scale_launcher(x.data_ptr<float>(), scale.data_ptr<float>(), y.data_ptr<float>(),
                                                   (int)x.size(0), (int)x.size(1), x.size(2) * x.size(3), (float)shift,
                                                   c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "channel_scale failed: ", cudaGetErrorString(err));
    return y;
}

static void register_channel_scale(pybind11::module& m) {
    m.def("channel_scale_forward", &channel_scale_forward, py::arg("x"), py::arg("scale"), py::arg("shift"));
}
REGISTER_BINDING(channel_scale, register_channel_scale);
