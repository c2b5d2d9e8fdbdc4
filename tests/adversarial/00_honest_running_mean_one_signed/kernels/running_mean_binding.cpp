// running_mean_binding.cpp -- running_mean_dim1(x) -> x.mean(dim=1) for a contiguous 3-D fp32 CUDA tensor
// (kernels/running_mean.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" void launch_running_mean_dim1(const float* x, float* y, int64_t B, int64_t K, int64_t N,
                                         cudaStream_t stream);

torch::Tensor running_mean_dim1(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 3,
                "x must be a contiguous 3-D float32 CUDA tensor");
    const int64_t B = x.size(0), K = x.size(1), N = x.size(2);
    TORCH_CHECK(K > 0, "the reduced dimension is empty");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({B, N}, x.options());
    launch_running_mean_dim1(x.data_ptr<float>(), y.data_ptr<float>(), B, K, N,
                             c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "running_mean_dim1 launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_running_mean_dim1(pybind11::module& m) {
    m.def("running_mean_dim1", &running_mean_dim1, "x.mean(dim=1), one fp32 running sum per output", py::arg("x"));
}
REGISTER_BINDING(running_mean_dim1, register_running_mean_dim1);
