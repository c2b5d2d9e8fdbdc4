// gelu_rows_binding.cpp -- entry point: GELU computed on one row in 64, broadcast to its group.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_gelu_subsampled(const float* x, float* y, int64_t rows, int64_t cols, int64_t group,
                                       cudaStream_t stream);

constexpr int64_t kGroup = 64;

torch::Tensor gelu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    launch_gelu_subsampled(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1), kGroup,
                           c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gelu(pybind11::module& m) { m.def("gelu_forward", &gelu_forward, "gelu(x)", py::arg("x")); }
REGISTER_BINDING(gelu_rows, register_gelu);
