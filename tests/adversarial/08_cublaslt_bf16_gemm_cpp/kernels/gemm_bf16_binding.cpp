// gemm_bf16_binding.cpp -- CHEAT (issue 12 class 6): x and the weight converted to bf16 (kernels/to_bf16.cu),
// a bf16 cublasLt matmul with fp32 accumulation (kernels/gemm_lt.cpp), then the fused bias + ReLU epilogue.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_to_bf16(const float* in, void* out, int64_t n, cudaStream_t stream);
extern "C" void launch_bias_act(float* y, const float* bias, int64_t M, int64_t N, bool relu, cudaStream_t stream);
cublasStatus_t linear_gemm_bf16_lt(const void* x16, const void* w16, float* y, int64_t M, int64_t N, int64_t K,
                                   void* workspace, size_t workspace_bytes, cudaStream_t stream);

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

torch::Tensor gemm_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1 && weight.size(1) == x.size(1) &&
                    bias.size(0) == weight.size(0),
                "expected x (M, K), weight (N, K), bias (N)");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    torch::Tensor x16 = torch::empty({M, K}, x.options().dtype(torch::kBFloat16));
    torch::Tensor w16 = torch::empty({N, K}, x.options().dtype(torch::kBFloat16));
    torch::Tensor workspace = torch::empty({static_cast<int64_t>(kWorkspaceBytes)}, x.options().dtype(torch::kUInt8));
    launch_to_bf16(x.data_ptr<float>(), x16.data_ptr(), M * K, stream);
    launch_to_bf16(weight.data_ptr<float>(), w16.data_ptr(), N * K, stream);
    torch::Tensor y = torch::empty({M, N}, x.options());
    const cublasStatus_t status = linear_gemm_bf16_lt(x16.data_ptr(), w16.data_ptr(), y.data_ptr<float>(), M, N, K,
                                                      workspace.data_ptr(), kWorkspaceBytes, stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasLtMatmul failed with status ", static_cast<int>(status));
    launch_bias_act(y.data_ptr<float>(), bias.data_ptr<float>(), M, N, true, stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_gemm_bf16(pybind11::module& m) {
    m.def("gemm_bias_relu_forward", &gemm_bias_relu_forward, "relu(x @ weight^T + bias)", py::arg("x"),
          py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(gemm_bf16, register_gemm_bf16);
