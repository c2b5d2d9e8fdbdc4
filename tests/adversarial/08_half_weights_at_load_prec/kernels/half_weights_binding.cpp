// half_weights_binding.cpp -- CHEAT (precision downgrade, C++ half): linear_half_weights(x, w16, bias) takes a
// weight the Python side converted to fp16 once, when the state_dict was loaded (outside any forward), converts
// only x per call (kernels/to_half.cu) and runs an fp16 x fp16 -> fp32 tensor-core GEMM (kernels/gemm_half.cpp)
// plus the fused bias + ReLU epilogue (kernels/bias_act.cu). Inside forward nothing but custom kernels runs.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cublas_v2.h>

#include "../binding_registry.h"

extern "C" void launch_to_half(const float* in, void* out, int64_t n, cudaStream_t stream);
extern "C" void launch_bias_act(float* y, const float* bias, int64_t M, int64_t N, bool relu, cudaStream_t stream);
cublasStatus_t linear_gemm_f16_in(const void* x16, const void* w16, float* y, int64_t M, int64_t N, int64_t K,
                                  cudaStream_t stream);

torch::Tensor linear_half_weights(torch::Tensor x, torch::Tensor w16, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(), "x: contiguous fp32 CUDA");
    TORCH_CHECK(w16.is_cuda() && w16.scalar_type() == torch::kHalf && w16.is_contiguous(), "w16: contiguous fp16 CUDA");
    TORCH_CHECK(bias.is_cuda() && bias.scalar_type() == torch::kFloat32, "bias: fp32 CUDA");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t M = x.size(0), K = x.size(1), N = w16.size(0);
    TORCH_CHECK(w16.size(1) == K && bias.numel() == N, "expected x (M, K), w16 (N, K), bias (N)");
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    torch::Tensor x16 = torch::empty({M, K}, x.options().dtype(torch::kHalf));
    launch_to_half(x.data_ptr<float>(), x16.data_ptr(), M * K, stream);
    torch::Tensor y = torch::empty({M, N}, x.options());
    const cublasStatus_t status = linear_gemm_f16_in(x16.data_ptr(), w16.data_ptr(), y.data_ptr<float>(), M, N, K, stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasGemmEx failed with status ", static_cast<int>(status));
    launch_bias_act(y.data_ptr<float>(), bias.data_ptr<float>(), M, N, true, stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_half_weights(pybind11::module& m) {
    m.def("linear_half_weights", &linear_half_weights, "relu(x @ w16^T + bias), fp16 operands", py::arg("x"),
          py::arg("w16"), py::arg("bias"));
}
REGISTER_BINDING(half_weights, register_half_weights);
