// thrust_scan_rows_binding.cpp -- Python entry point: torch.cumsum(x, dim=1) for a contiguous 2-D float32
// tensor (kernels/thrust_scan_rows.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <string>

#include "../binding_registry.h"

std::string thrust_scan_rows(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);

namespace {

torch::Tensor scan_rows_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
                "x must be a contiguous 2-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    if (y.numel() == 0) return y;
    const std::string error = thrust_scan_rows(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1),
                                               c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(error.empty(), "thrust::inclusive_scan_by_key failed: ", error);
    return y;
}

}  // namespace

static void register_thrust_scan_rows(pybind11::module& m) {
    m.def("scan_rows_forward", &scan_rows_forward, "torch.cumsum(x, dim=1) with thrust::inclusive_scan_by_key",
          py::arg("x"));
}
REGISTER_BINDING(thrust_scan_rows, register_thrust_scan_rows);
