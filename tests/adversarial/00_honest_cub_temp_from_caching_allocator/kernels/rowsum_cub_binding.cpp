#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" cudaError_t rowsum_cub(void* temp, size_t* temp_bytes, const float* x, float* y, int rows, int cols,
                                  cudaStream_t stream);

static torch::Tensor rowsum_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32 && x.dim() == 2,
                "x: contiguous 2-D float32 CUDA");
    const int rows = (int)x.size(0), cols = (int)x.size(1);
    auto y = torch::empty({rows}, x.options());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    size_t bytes = 0;
    cudaError_t err = rowsum_cub(nullptr, &bytes, x.data_ptr<float>(), y.data_ptr<float>(), rows, cols, stream);
    TORCH_CHECK(err == cudaSuccess, "cub size query failed: ", cudaGetErrorString(err));
    auto temp = at::cuda::getCUDADeviceAllocator()->allocate(bytes);
    err = rowsum_cub(temp.get(), &bytes, x.data_ptr<float>(), y.data_ptr<float>(), rows, cols, stream);
    TORCH_CHECK(err == cudaSuccess, "cub segmented reduce failed: ", cudaGetErrorString(err));
    return y;
}

static void register_rowsum(pybind11::module& m) { m.def("rowsum_forward", &rowsum_forward, py::arg("x")); }
REGISTER_BINDING(rowsum, register_rowsum);
