// transpose_add_binding.cpp -- Python entry point: x + y^T for contiguous fp32 x (R, C) and y (C, R) with the TMA
// kernel of kernels/tma_transpose_add.cu.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>
#include <limits>

#include "../binding_registry.h"

extern "C" const char* launch_transpose_add_tma(const float* x, const float* y, float* out, int rows, int cols,
                                                cudaStream_t stream);

namespace {

torch::Tensor transpose_add_forward(torch::Tensor x, torch::Tensor y) {
    for (const torch::Tensor* t : {&x, &y}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous() && t->dim() == 2,
                    "x and y must be contiguous 2-D float32 CUDA tensors");
        TORCH_CHECK(reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 == 0, "TMA needs 16-byte aligned tensors");
    }
    const int64_t rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(y.size(0) == cols && y.size(1) == rows, "expected x (R, C) and y (C, R)");
    TORCH_CHECK(rows % 4 == 0 && cols % 4 == 0, "TMA needs row pitches that are multiples of 16 bytes (R, C % 4 == 0)");
    TORCH_CHECK(rows <= std::numeric_limits<int>::max() && cols <= std::numeric_limits<int>::max(), "sizes must fit in int");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor out = torch::empty({rows, cols}, x.options());
    const char* error = launch_transpose_add_tma(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(),
                                                 static_cast<int>(rows), static_cast<int>(cols),
                                                 c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(error == nullptr, "transpose_add: ", error == nullptr ? "" : error);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "transpose_add launch failed: ", cudaGetErrorString(err));
    return out;
}

}  // namespace

static void register_transpose_add(pybind11::module& m) {
    m.def("transpose_add_forward", &transpose_add_forward, "x + y^T (TMA tiles)", py::arg("x"), py::arg("y"));
}
REGISTER_BINDING(transpose_add, register_transpose_add);
