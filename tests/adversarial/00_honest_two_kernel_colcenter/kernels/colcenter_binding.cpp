// colcenter_binding.cpp -- Python entry point: relu(x - x.mean(dim=0)) * weight via two chained kernels.
// The partial column sums live in a scratch tensor allocated here (torch::empty: allocation only).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" int colcenter_chunks();
extern "C" void launch_colcenter(const float* x, const float* weight, float* partial, float* y, int64_t rows,
                                 int64_t cols, cudaStream_t stream);

torch::Tensor colcenter_forward(torch::Tensor x, torch::Tensor weight) {
    for (const torch::Tensor* t : {&x, &weight}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 1 && weight.size(0) == x.size(1), "expected x (R, C), weight (C)");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t rows = x.size(0), cols = x.size(1);
    torch::Tensor y = torch::empty_like(x);
    torch::Tensor partial = torch::empty({colcenter_chunks(), cols}, x.options());
    launch_colcenter(x.data_ptr<float>(), weight.data_ptr<float>(), partial.data_ptr<float>(), y.data_ptr<float>(),
                     rows, cols, c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "colcenter launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_colcenter(pybind11::module& m) {
    m.def("colcenter_forward", &colcenter_forward, "relu(x - x.mean(dim=0)) * weight", py::arg("x"),
          py::arg("weight"));
}
REGISTER_BINDING(colcenter, register_colcenter);
