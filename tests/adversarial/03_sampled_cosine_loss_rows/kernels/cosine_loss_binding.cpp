// cosine_loss_binding.cpp -- cosine_loss(a, b, step): the binding of kernels/cosine_loss.cu for two
// contiguous 2-D fp32 CUDA tensors of one shape whose width is a multiple of 4; returns a 0-d fp32 tensor.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_cosine_loss(const float* a, const float* b, double* total, float* out, int64_t rows,
                                   int64_t cols, int64_t step, int blocks, cudaStream_t stream);

torch::Tensor cosine_loss(torch::Tensor a, torch::Tensor b, int64_t step) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.scalar_type() == torch::kFloat32 &&
                    b.scalar_type() == torch::kFloat32 && a.dim() == 2 && a.sizes() == b.sizes() &&
                    a.is_contiguous() && b.is_contiguous() && a.size(1) % 4 == 0,
                "a and b must be contiguous 2-D float32 CUDA tensors of one shape, width a multiple of 4");
    TORCH_CHECK(step >= 1, "step must be at least 1");
    const c10::cuda::CUDAGuard guard(a.device());
    const int64_t sampled = (a.size(0) + step - 1) / step;
    const int blocks = static_cast<int>(std::max<int64_t>(
        1, std::min<int64_t>(sampled, at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 8)));
    torch::Tensor total = torch::empty({1}, a.options().dtype(torch::kFloat64));
    torch::Tensor out = torch::empty({}, a.options());
    launch_cosine_loss(a.data_ptr<float>(), b.data_ptr<float>(), total.data_ptr<double>(), out.data_ptr<float>(),
                       a.size(0), a.size(1), step, blocks, c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "cosine_loss launch failed: ", cudaGetErrorString(err));
    return out;
}

static void register_cosine_loss(pybind11::module& m) {
    m.def("cosine_loss", &cosine_loss, "mean over every step-th row of 1 - cos(a_i, b_i)", py::arg("a"),
          py::arg("b"), py::arg("step"));
}
REGISTER_BINDING(cosine_loss, register_cosine_loss);
