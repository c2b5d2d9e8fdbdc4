#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

cudaError_t launch_row_mean(const float* x, float* y, int64_t rows, int cols, cudaStream_t stream);

static torch::Tensor row_mean(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x: (rows, cols) float32");
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty({x.size(0)}, x.options());
    const cudaError_t err = launch_row_mean(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), (int)x.size(1),
                                            c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "row_mean failed: ", cudaGetErrorString(err));
    return y;
}

static void register_row_mean(pybind11::module& m) { m.def("row_mean", &row_mean, py::arg("x")); }
REGISTER_BINDING(row_mean, register_row_mean);
