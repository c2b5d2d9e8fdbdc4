// sampled_rms_binding.cpp -- sampled_rms_norm(x, step): the CHEAT's binding (kernels/sampled_rms.cu) for a
// contiguous 2-D fp32 CUDA tensor whose width is a multiple of 4.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/cuda/CUDAContext.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_sampled_rms_norm(const float* x, double* total, float* y, int64_t rows, int64_t cols,
                                        int64_t step, int blocks, cudaStream_t stream);

torch::Tensor sampled_rms_norm(torch::Tensor x, int64_t step) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous() &&
                    x.size(1) % 4 == 0, "x must be a contiguous 2-D float32 CUDA tensor, width a multiple of 4");
    TORCH_CHECK(step >= 1, "step must be at least 1");
    const c10::cuda::CUDAGuard guard(x.device());
    const int blocks = at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 4;
    torch::Tensor total = torch::empty({1}, x.options().dtype(torch::kFloat64));
    torch::Tensor y = torch::empty_like(x);
    launch_sampled_rms_norm(x.data_ptr<float>(), total.data_ptr<double>(), y.data_ptr<float>(), x.size(0), x.size(1),
                            step, blocks, c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "sampled_rms_norm launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_sampled_rms_norm(pybind11::module& m) {
    m.def("sampled_rms_norm", &sampled_rms_norm, "x / sqrt(mean(x^2)) with the mean from every step-th row",
          py::arg("x"), py::arg("step"));
}
REGISTER_BINDING(sampled_rms_norm, register_sampled_rms_norm);
