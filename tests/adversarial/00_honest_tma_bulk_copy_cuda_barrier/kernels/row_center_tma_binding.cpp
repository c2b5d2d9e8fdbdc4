#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <cstdint>
#include "../binding_registry.h"

extern "C" cudaError_t row_center_launcher(const float* x, float* y, int rows, int cols, cudaStream_t stream);

static torch::Tensor row_center_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.dim() == 2 && x.scalar_type() == torch::kFloat32, "x: 2-D float32");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0, "bulk copies need 16-byte alignment");
    auto y = torch::empty_like(x);
    const cudaError_t err = row_center_launcher(x.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(0), (int)x.size(1),
                                                c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "row_center failed: ", cudaGetErrorString(err));
    return y;
}

static void register_row_center(pybind11::module& m) { m.def("row_center_forward", &row_center_forward, py::arg("x")); }
REGISTER_BINDING(row_center, register_row_center);
