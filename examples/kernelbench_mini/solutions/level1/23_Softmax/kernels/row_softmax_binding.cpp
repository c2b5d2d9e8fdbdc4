// row_softmax_binding.cpp -- Python entry point for the row softmax kernel.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

extern "C" void launch_row_softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);

torch::Tensor row_softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows, cols)");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(x.size(0) <= std::numeric_limits<int32_t>::max() && x.size(1) <= std::numeric_limits<int32_t>::max(),
                "x is too large");
    const c10::cuda::CUDAGuard guard(x.device());

    torch::Tensor y = torch::empty_like(x);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    launch_row_softmax(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1), stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "row_softmax kernel launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_row_softmax(pybind11::module& m) {
    m.def("row_softmax_forward", &row_softmax_forward, "softmax over the last dim of a 2-D float32 tensor",
          py::arg("x"));
}
REGISTER_BINDING(row_softmax, register_row_softmax);
