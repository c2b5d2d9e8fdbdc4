// tanh_transpose_binding.cpp -- tanh_transpose_forward(x) -> tanh(x).t() as a contiguous tensor of its own.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_tanh_transpose(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);

namespace {

torch::Tensor tanh_transpose_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(x.size(0) <= 65535 * 32, "too many rows for the grid");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({x.size(1), x.size(0)}, x.options());
    launch_tanh_transpose(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1),
                          c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "tanh_transpose launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_tanh_transpose(pybind11::module& m) {
    m.def("tanh_transpose_forward", &tanh_transpose_forward, "tanh(x).t(), contiguous", py::arg("x"));
}
REGISTER_BINDING(tanh_transpose, register_tanh_transpose);
