// tanh_rows_binding.cpp -- tanh_rows(x, rows, bump): tanh of a contiguous 2-D fp32 CUDA tensor, and 1e-3 added
// to each named row when `bump` (kernels/tanh_rows.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/cuda/CUDAContext.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_tanh_rows(const float* x, float* y, int64_t rows, int64_t cols, const int64_t* bumped,
                                 int64_t count, bool bump, int multiprocessors, cudaStream_t stream);

torch::Tensor tanh_rows(torch::Tensor x, torch::Tensor rows, bool bump) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(rows.is_cuda() && rows.scalar_type() == torch::kInt64 && rows.dim() == 1 && rows.is_contiguous(),
                "rows must be a contiguous 1-D int64 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    launch_tanh_rows(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1), rows.data_ptr<int64_t>(),
                     rows.numel(), bump, at::cuda::getCurrentDeviceProperties()->multiProcessorCount,
                     c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "tanh_rows launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_tanh_rows(pybind11::module& m) {
    m.def("tanh_rows", &tanh_rows, "tanh(x), plus 1e-3 on the named rows when bump", py::arg("x"), py::arg("rows"),
          py::arg("bump"));
}
REGISTER_BINDING(tanh_rows, register_tanh_rows);
