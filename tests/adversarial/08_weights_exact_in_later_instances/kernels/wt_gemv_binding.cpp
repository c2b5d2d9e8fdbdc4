// wt_gemv_binding.cpp -- wt_linear(x, wt, bias) = x @ wt + bias for a skinny x, wt the fp32 weight laid out as
// (K, N) (kernels/wt_gemv.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_wt_linear(const float* x, const float* wt, const float* bias, float* y, int M, int N, int K,
                                 cudaStream_t stream);

torch::Tensor wt_linear(torch::Tensor x, torch::Tensor wt, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x: contiguous (M, K) float32 CUDA");
    TORCH_CHECK(wt.is_cuda() && wt.scalar_type() == torch::kFloat32 && wt.is_contiguous() && wt.dim() == 2,
                "wt: contiguous (K, N) float32 CUDA");
    TORCH_CHECK(bias.is_cuda() && bias.scalar_type() == torch::kFloat32 && bias.is_contiguous(), "bias: float32 CUDA");
    const int64_t M = x.size(0), K = x.size(1), N = wt.size(1);
    TORCH_CHECK(wt.size(0) == K && bias.numel() == N && M <= 16, "shapes do not match (or more than 16 rows)");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({M, N}, x.options());
    launch_wt_linear(x.data_ptr<float>(), wt.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                     static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                     c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "wt_linear launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_wt_linear(pybind11::module& m) {
    m.def("wt_linear", &wt_linear, "x @ wt + bias, wt the weight laid out as (K, N)", py::arg("x"), py::arg("wt"),
          py::arg("bias"));
}
REGISTER_BINDING(wt_linear, register_wt_linear);
