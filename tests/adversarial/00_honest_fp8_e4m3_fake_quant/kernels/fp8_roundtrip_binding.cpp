#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include "../binding_registry.h"

extern "C" void fp8_roundtrip_launcher(const float* x, float* y, int64_t n, float s, cudaStream_t stream);

static torch::Tensor fp8_roundtrip_forward(torch::Tensor x, double scale) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x: contiguous float32 CUDA");
    auto y = torch::empty_like(x);
    fp8_roundtrip_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), (float)scale,
                           c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "fp8 roundtrip launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_fp8_roundtrip(pybind11::module& m) {
    m.def("fp8_roundtrip_forward", &fp8_roundtrip_forward, py::arg("x").noconvert(), py::arg("scale"),
          py::call_guard<py::gil_scoped_release>());
}
REGISTER_BINDING(fp8_roundtrip, register_fp8_roundtrip);
