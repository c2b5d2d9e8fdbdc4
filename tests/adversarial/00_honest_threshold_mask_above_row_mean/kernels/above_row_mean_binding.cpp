// above_row_mean_binding.cpp -- above_row_mean_forward(x) -> x > x.mean(dim=-1, keepdim=True), a bool tensor.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_above_row_mean(const float* x, bool* mask, int64_t rows, int cols, cudaStream_t stream);

namespace {

torch::Tensor above_row_mean_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(x.size(1) <= (1 << 30) && x.size(0) <= 2147483647, "too large");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor mask = torch::empty(x.sizes(), x.options().dtype(torch::kBool));
    launch_above_row_mean(x.data_ptr<float>(), mask.data_ptr<bool>(), x.size(0), static_cast<int>(x.size(1)),
                          c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "above_row_mean launch failed: ", cudaGetErrorString(err));
    return mask;
}

}  // namespace

static void register_above_row_mean(pybind11::module& m) {
    m.def("above_row_mean_forward", &above_row_mean_forward, "x > x.mean(dim=-1, keepdim=True)", py::arg("x"));
}
REGISTER_BINDING(above_row_mean, register_above_row_mean);
