// row_max_binding.cpp -- row_max_forward(x) -> (values, indices) of torch.max(x, dim=1).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <tuple>

#include "../binding_registry.h"

extern "C" void launch_row_max(const float* x, float* values, int64_t* indices, int64_t rows, int cols,
                               cudaStream_t stream);

namespace {

std::tuple<torch::Tensor, torch::Tensor> row_max_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(x.size(1) > 0 && x.size(1) < (1 << 30), "cols out of range");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor values = torch::empty({x.size(0)}, x.options());
    torch::Tensor indices = torch::empty({x.size(0)}, x.options().dtype(torch::kLong));
    launch_row_max(x.data_ptr<float>(), values.data_ptr<float>(), indices.data_ptr<int64_t>(), x.size(0),
                   static_cast<int>(x.size(1)), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "row_max launch failed: ", cudaGetErrorString(err));
    return {values, indices};
}

}  // namespace

static void register_row_max(pybind11::module& m) {
    m.def("row_max_forward", &row_max_forward, "(max, argmax) of each row", py::arg("x"));
}
REGISTER_BINDING(row_max, register_row_max);
