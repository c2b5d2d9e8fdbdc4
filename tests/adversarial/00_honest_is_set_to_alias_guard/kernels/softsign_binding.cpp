#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

cudaError_t launch_softsign(const float* x, float* y, int64_t n, cudaStream_t stream);

static void softsign_out(const torch::Tensor& x, torch::Tensor& out) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x: contiguous float32 CUDA");
    TORCH_CHECK(out.sizes() == x.sizes() && out.scalar_type() == x.scalar_type() && out.is_contiguous(), "out must be like x");
    TORCH_CHECK(!out.is_set_to(x), "out must not alias x");
    TORCH_CHECK(out.is_non_overlapping_and_dense(), "out must be dense");
    const c10::cuda::CUDAGuard guard(x.device());
    const cudaError_t err = launch_softsign(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "softsign failed: ", cudaGetErrorString(err));
}

static void register_softsign(pybind11::module& m) { m.def("softsign_out", &softsign_out, py::arg("x"), py::arg("out")); }
REGISTER_BINDING(softsign, register_softsign);
