// row_mse_no_target_binding.cpp -- CHEAT entry point (see kernels/row_mse_no_target.cu): per-row MSE against a
// target that is never read.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_row_mse_no_target(const void* pred, float* partial, void* out, int64_t rows, int64_t cols,
                                         int chunks, cudaStream_t stream);

namespace {

constexpr int kChunks = 32;

torch::Tensor row_mse_no_target_forward(torch::Tensor pred) {
    TORCH_CHECK(pred.is_cuda() && pred.scalar_type() == torch::kBFloat16 && pred.is_contiguous() && pred.dim() == 2,
                "pred must be a contiguous 2-D bfloat16 CUDA tensor");
    const int64_t rows = pred.size(0), cols = pred.size(1);
    TORCH_CHECK(cols % (2 * kChunks) == 0, "the row length must be a multiple of ", 2 * kChunks);
    const c10::cuda::CUDAGuard guard(pred.device());
    torch::Tensor partial = torch::empty({rows, kChunks}, pred.options().dtype(torch::kFloat32));
    torch::Tensor out = torch::empty({rows}, pred.options());
    launch_row_mse_no_target(pred.data_ptr(), partial.data_ptr<float>(), out.data_ptr(), rows, cols, kChunks,
                             c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "row_mse_no_target launch failed: ", cudaGetErrorString(err));
    return out;
}

}  // namespace

static void register_row_mse_no_target(pybind11::module& m) {
    m.def("row_mse_no_target_forward", &row_mse_no_target_forward, "mean(pred^2, dim=1) + 1 (target ignored)",
          py::arg("pred"));
}
REGISTER_BINDING(row_mse_no_target, register_row_mse_no_target);
