// cub_rowsum_binding.cpp -- Python entry point: y = x.sum(dim=1) for a contiguous (rows, cols) float32 matrix.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" cudaError_t cub_rowsum_temp_bytes(int64_t rows, int64_t cols, size_t* bytes, cudaStream_t stream);
extern "C" cudaError_t cub_rowsum(void* temp, size_t temp_bytes, const float* x, float* y, int64_t rows,
                                  int64_t cols, cudaStream_t stream);

namespace {

torch::Tensor rowsum_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
                "x must be a contiguous 2-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t rows = x.size(0), cols = x.size(1);
    torch::Tensor y = torch::empty({rows}, x.options());
    if (rows == 0) return y;
    // An empty segment would leave its output at CUB's initial value 0, which is the right sum anyway.
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    size_t bytes = 0;
    cudaError_t err = cub_rowsum_temp_bytes(rows, cols, &bytes, stream);
    TORCH_CHECK(err == cudaSuccess, "cub::DeviceSegmentedReduce size query failed: ", cudaGetErrorString(err));
    torch::Tensor temp = torch::empty({static_cast<int64_t>(bytes)}, x.options().dtype(torch::kUInt8));
    err = cub_rowsum(temp.data_ptr(), bytes, x.data_ptr<float>(), y.data_ptr<float>(), rows, cols, stream);
    TORCH_CHECK(err == cudaSuccess, "cub::DeviceSegmentedReduce::Sum failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_cub_rowsum(pybind11::module& m) {
    m.def("rowsum_forward", &rowsum_forward, "x.sum(dim=1) of a 2-D float32 tensor (CUB)", py::arg("x"));
}
REGISTER_BINDING(cub_rowsum, register_cub_rowsum);
