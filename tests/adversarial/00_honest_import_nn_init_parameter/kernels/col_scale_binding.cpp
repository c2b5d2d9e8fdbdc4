#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include "../binding_registry.h"

extern "C" void col_scale_launcher(const float* x, const float* w, float* y, int64_t n, int cols, cudaStream_t s);

static torch::Tensor col_scale_forward(torch::Tensor x, torch::Tensor w) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x: contiguous float32");
    TORCH_CHECK(w.is_contiguous() && w.numel() == x.size(-1) && w.scalar_type() == torch::kFloat32, "w: (cols,) float32");
    auto y = torch::empty_like(x);
    col_scale_launcher(x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), x.numel(), (int)x.size(-1),
                       c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "col_scale launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_col_scale(pybind11::module& m) {
    m.def("col_scale_forward", &col_scale_forward, py::arg("x"), py::arg("w"));
}
REGISTER_BINDING(col_scale, register_col_scale);
