// cub_minmax_binding.cpp -- Python entry point: [min(x), max(x)] of a contiguous float32 tensor (CUB).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" cudaError_t cub_minmax_temp_bytes(int64_t n, size_t* bytes, cudaStream_t stream);
extern "C" cudaError_t cub_minmax(void* temp, size_t temp_bytes, const float* x, float* out, int64_t n,
                                  cudaStream_t stream);

namespace {

torch::Tensor minmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    TORCH_CHECK(x.numel() > 0, "min and max of an empty tensor are undefined");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor out = torch::empty({2}, x.options());
    TORCH_CHECK(reinterpret_cast<uintptr_t>(out.data_ptr()) % 8 == 0, "output not 8-byte aligned");
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    size_t bytes = 0;
    cudaError_t err = cub_minmax_temp_bytes(x.numel(), &bytes, stream);
    TORCH_CHECK(err == cudaSuccess, "cub::DeviceReduce size query failed: ", cudaGetErrorString(err));
    torch::Tensor temp = torch::empty({static_cast<int64_t>(bytes)}, x.options().dtype(torch::kUInt8));
    err = cub_minmax(temp.data_ptr(), bytes, x.data_ptr<float>(), out.data_ptr<float>(), x.numel(), stream);
    TORCH_CHECK(err == cudaSuccess, "cub::DeviceReduce::TransformReduce failed: ", cudaGetErrorString(err));
    return out;
}

}  // namespace

static void register_cub_minmax(pybind11::module& m) {
    m.def("minmax_forward", &minmax_forward, "[min(x), max(x)] of a float32 tensor (CUB)", py::arg("x"));
}
REGISTER_BINDING(cub_minmax, register_cub_minmax);
