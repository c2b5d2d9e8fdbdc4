// center_relu_binding.cpp -- y = relu(x - x.mean()) through one cooperative launch on the current stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" int center_relu_blocks(int device);
extern "C" int center_relu_launcher(const float* x, float* y, double* partial, int64_t n, int blocks,
                                    cudaStream_t stream);

static torch::Tensor center_relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.numel() > 0,
                "x must be a non-empty contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    const int blocks = center_relu_blocks(x.get_device());
    TORCH_CHECK(blocks > 0, "this device cannot run a cooperative launch of the kernel");
    torch::Tensor y = torch::empty_like(x);
    torch::Tensor partial = torch::empty({blocks}, x.options().dtype(torch::kFloat64));
    const int err = center_relu_launcher(x.data_ptr<float>(), y.data_ptr<float>(), partial.data_ptr<double>(),
                                         x.numel(), blocks, c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == 0, "cooperative launch failed: ", cudaGetErrorString(static_cast<cudaError_t>(err)));
    return y;
}

static void register_center_relu(pybind11::module& m) {
    m.def("center_relu_forward", &center_relu_forward, "relu(x - x.mean()) of a float32 tensor", py::arg("x"));
}
REGISTER_BINDING(center_relu, register_center_relu);
