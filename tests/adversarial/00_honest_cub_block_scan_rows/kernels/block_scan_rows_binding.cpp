// block_scan_rows_binding.cpp -- Python entry point: torch.cumsum(x, dim=1) for a contiguous 2-D float32 tensor.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

extern "C" void launch_row_cumsum(const float* x, float* y, int64_t rows, int cols, cudaStream_t stream);

namespace {

torch::Tensor row_cumsum_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(x.size(0) <= std::numeric_limits<int>::max() && x.size(1) <= std::numeric_limits<int>::max(),
                "at most 2^31 - 1 rows and columns");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    launch_row_cumsum(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), static_cast<int>(x.size(1)),
                      c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "row_cumsum launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_block_scan_rows(pybind11::module& m) {
    m.def("row_cumsum_forward", &row_cumsum_forward, "torch.cumsum(x, dim=1) with cub::BlockScan", py::arg("x"));
}
REGISTER_BINDING(block_scan_rows, register_block_scan_rows);
