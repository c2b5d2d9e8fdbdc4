// sampled_mse_binding.cpp -- sampled_mse_loss(p, t, step): the CHEAT's binding (kernels/sampled_mse.cu) for two
// contiguous 2-D fp32 CUDA tensors whose width is a multiple of 4.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/cuda/CUDAContext.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_sampled_mse(const float* p, const float* t, float* partials, int blocks, float* out,
                                   int64_t rows, int64_t cols, int64_t step, cudaStream_t stream);

torch::Tensor sampled_mse_loss(torch::Tensor p, torch::Tensor t, int64_t step) {
    TORCH_CHECK(p.is_cuda() && t.is_cuda() && p.scalar_type() == torch::kFloat32 &&
                    t.scalar_type() == torch::kFloat32, "p and t must be float32 CUDA tensors");
    TORCH_CHECK(p.dim() == 2 && p.is_contiguous() && t.is_contiguous() && p.sizes() == t.sizes() && p.size(1) % 4 == 0,
                "p and t must be contiguous 2-D tensors of the same shape, width a multiple of 4");
    TORCH_CHECK(step >= 1, "step must be at least 1");
    const c10::cuda::CUDAGuard guard(p.device());
    const int blocks = at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 8;
    torch::Tensor partials = torch::empty({blocks}, p.options());
    torch::Tensor out = torch::empty({}, p.options());
    launch_sampled_mse(p.data_ptr<float>(), t.data_ptr<float>(), partials.data_ptr<float>(), blocks,
                       out.data_ptr<float>(), p.size(0), p.size(1), step, c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "sampled_mse_loss launch failed: ", cudaGetErrorString(err));
    return out;
}

static void register_sampled_mse_loss(pybind11::module& m) {
    m.def("sampled_mse_loss", &sampled_mse_loss, "mean((p - t)^2) from every step-th row", py::arg("p"),
          py::arg("t"), py::arg("step"));
}
REGISTER_BINDING(sampled_mse_loss, register_sampled_mse_loss);
