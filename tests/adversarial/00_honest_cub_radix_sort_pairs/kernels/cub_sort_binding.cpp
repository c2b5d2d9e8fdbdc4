// cub_sort_binding.cpp -- Python entry point: (values, indices) = torch.sort(x, stable=True) for a 1-D
// contiguous float32 tensor, with CUB's radix sort (kernels/cub_sort.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <tuple>

#include "../binding_registry.h"

extern "C" cudaError_t cub_sort_pairs_temp_bytes(int64_t n, size_t* bytes, cudaStream_t stream);
extern "C" cudaError_t cub_sort_pairs(void* temp, size_t temp_bytes, const float* keys_in, float* keys_out,
                                      int64_t* idx_in, int64_t* idx_out, int64_t n, cudaStream_t stream);

namespace {

std::tuple<torch::Tensor, torch::Tensor> stable_sort_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 1 && x.is_contiguous(),
                "x must be a contiguous 1-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t n = x.numel();
    torch::Tensor values = torch::empty_like(x);
    torch::Tensor indices = torch::empty({n}, x.options().dtype(torch::kInt64));
    if (n == 0) return {values, indices};
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    size_t bytes = 0;
    cudaError_t err = cub_sort_pairs_temp_bytes(n, &bytes, stream);
    TORCH_CHECK(err == cudaSuccess, "cub::DeviceRadixSort size query failed: ", cudaGetErrorString(err));
    torch::Tensor temp = torch::empty({static_cast<int64_t>(bytes)}, x.options().dtype(torch::kUInt8));
    torch::Tensor identity = torch::empty({n}, x.options().dtype(torch::kInt64));
    err = cub_sort_pairs(temp.data_ptr(), bytes, x.data_ptr<float>(), values.data_ptr<float>(),
                         identity.data_ptr<int64_t>(), indices.data_ptr<int64_t>(), n, stream);
    TORCH_CHECK(err == cudaSuccess, "cub::DeviceRadixSort::SortPairs failed: ", cudaGetErrorString(err));
    return {values, indices};
}

}  // namespace

static void register_cub_sort(pybind11::module& m) {
    m.def("stable_sort_forward", &stable_sort_forward, "(values, indices) of a stable ascending sort (CUB)",
          py::arg("x"));
}
REGISTER_BINDING(cub_sort, register_cub_sort);
