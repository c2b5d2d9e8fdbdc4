// cub_cumsum_binding.cpp -- Python entry point: y = cumsum(x) for a contiguous 1-D float32 tensor.
// CUB's temporary storage is a uint8 tensor from torch's caching allocator (freed back to it, stream-ordered,
// when the tensor goes out of scope), so the scan allocates nothing behind torch's back.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" cudaError_t cub_cumsum_temp_bytes(int64_t n, size_t* bytes, cudaStream_t stream);
extern "C" cudaError_t cub_cumsum(void* temp, size_t temp_bytes, const float* x, float* y, int64_t n,
                                  cudaStream_t stream);

namespace {

torch::Tensor cumsum_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 1 && x.is_contiguous(),
                "x must be a contiguous 1-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    const int64_t n = x.numel();
    if (n == 0) return y;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    size_t bytes = 0;
    cudaError_t err = cub_cumsum_temp_bytes(n, &bytes, stream);
    TORCH_CHECK(err == cudaSuccess, "cub::DeviceScan size query failed: ", cudaGetErrorString(err));
    torch::Tensor temp = torch::empty({static_cast<int64_t>(bytes)}, x.options().dtype(torch::kUInt8));
    err = cub_cumsum(temp.data_ptr(), bytes, x.data_ptr<float>(), y.data_ptr<float>(), n, stream);
    TORCH_CHECK(err == cudaSuccess, "cub::DeviceScan::InclusiveSum failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_cub_cumsum(pybind11::module& m) {
    m.def("cumsum_forward", &cumsum_forward, "inclusive prefix sum of a 1-D float32 tensor (CUB)", py::arg("x"));
}
REGISTER_BINDING(cub_cumsum, register_cub_cumsum);
