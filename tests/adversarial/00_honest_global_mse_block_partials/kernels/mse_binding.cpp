// mse_binding.cpp -- mse_loss(p, t) -> mean((p - t)^2) for two contiguous fp32 CUDA tensors of the same size
// (kernels/mse.cu); the per-block partials live in a torch::empty buffer on the current stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/cuda/CUDAContext.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" int mse_partial_blocks(int multiprocessors);
extern "C" void launch_mse(const float* p, const float* t, float* partials, int blocks, float* out, int64_t n,
                           cudaStream_t stream);

torch::Tensor mse_loss(torch::Tensor p, torch::Tensor t) {
    TORCH_CHECK(p.is_cuda() && t.is_cuda() && p.scalar_type() == torch::kFloat32 &&
                    t.scalar_type() == torch::kFloat32, "p and t must be float32 CUDA tensors");
    TORCH_CHECK(p.is_contiguous() && t.is_contiguous() && p.sizes() == t.sizes(), "p and t must be contiguous, same shape");
    TORCH_CHECK(p.numel() > 0, "empty inputs");
    const c10::cuda::CUDAGuard guard(p.device());
    const int blocks = mse_partial_blocks(at::cuda::getCurrentDeviceProperties()->multiProcessorCount);
    torch::Tensor partials = torch::empty({blocks}, p.options());
    torch::Tensor out = torch::empty({}, p.options());
    launch_mse(p.data_ptr<float>(), t.data_ptr<float>(), partials.data_ptr<float>(), blocks, out.data_ptr<float>(),
               p.numel(), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "mse_loss launch failed: ", cudaGetErrorString(err));
    return out;
}

static void register_mse_loss(pybind11::module& m) {
    m.def("mse_loss", &mse_loss, "mean((p - t)^2) over every element", py::arg("p"), py::arg("t"));
}
REGISTER_BINDING(mse_loss, register_mse_loss);
